//! Name patterns for `--irq`, `--task`: a number, an exact name or a glob.

/// A pattern over a named, numbered thing (an IRQ: `36`, `virtio1-req.0`, `virtio*`; a
/// task: `1234`, `dd`, `iperf*`). `*` matches any run of characters, `?` one character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// The pattern as given.
    pub fn new(s: impl Into<String>) -> Pattern {
        Pattern(s.into())
    }

    /// The text as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `number` equals the pattern read as a number, or `name` matches it.
    pub fn matches(&self, number: i64, name: &str) -> bool {
        if let Ok(n) = self.0.parse::<i64>() {
            return n == number;
        }
        glob(self.0.as_bytes(), name.as_bytes())
    }
}

/// `*` / `?` glob matching, iterative with one backtrack point.
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(Pattern::new("36").matches(36, "virtio1-req.0"));
        assert!(!Pattern::new("36").matches(37, "36"));
        assert!(Pattern::new("virtio1-req.0").matches(36, "virtio1-req.0"));
        assert!(Pattern::new("virtio*").matches(36, "virtio1-req.0"));
        assert!(Pattern::new("*req.?").matches(36, "virtio1-req.0"));
        assert!(!Pattern::new("eth*").matches(36, "virtio1-req.0"));
        assert!(Pattern::new("dd").matches(5, "dd"));
        assert!(!Pattern::new("dd").matches(5, "ddd"));
    }
}
