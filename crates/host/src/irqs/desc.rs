//! An IRQ's description (chip, hwirq, trigger, actions) in one string.

/// The chip, hwirq, trigger and actions of an IRQ, one after the other in one string
/// with the ends of the first three: one allocation an IRQ, where four Strings and a
/// Vec of them took some 200 bytes before their text.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Desc {
    text: Box<str>,
    chip_end: u32,
    hwirq_end: u32,
    trigger_end: u32,
    flags: u8,
}

/// `hwirq` is given (else `None`, not empty).
const HWIRQ: u8 = 1;
/// `trigger` is given.
const TRIGGER: u8 = 2;
/// The actions are as /sys/kernel/irq/N/actions lists them (split at `,`), not as
/// /proc/interrupts prints them (split at `, `, trimmed).
const SYS_ACTIONS: u8 = 4;

/// How the actions text is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ActionList {
    /// As /proc/interrupts prints them: `a, b` (words joined by single spaces).
    Proc,
    /// As /sys/kernel/irq/N/actions lists them: `a,b`.
    Sys,
}

/// A part of a description as given: a string as it is, or the words of one joined by
/// single spaces (written straight into the description, never into a String of its own).
#[derive(Clone, Copy)]
enum Part<'a> {
    Text(&'a str),
    Words(&'a str),
}

impl Part<'_> {
    fn len(self) -> usize {
        match self {
            Part::Text(s) => s.len(),
            Part::Words(s) => {
                let (mut len, mut words) = (0usize, 0usize);
                for w in s.split_whitespace() {
                    len += w.len();
                    words += 1;
                }
                len + words.saturating_sub(1)
            }
        }
    }

    fn push_to(self, out: &mut String) {
        match self {
            Part::Text(s) => out.push_str(s),
            Part::Words(s) => {
                for (i, w) in s.split_whitespace().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(w);
                }
            }
        }
    }
}

impl Desc {
    /// The parts, as they are to be read back.
    pub(crate) fn new(
        chip: &str,
        hwirq: Option<&str>,
        trigger: Option<&str>,
        actions: &str,
        list: ActionList,
    ) -> Desc {
        Desc::of_parts(
            Part::Text(chip),
            hwirq.map(Part::Text),
            trigger.map(Part::Text),
            Part::Text(actions),
            list,
        )
    }

    /// The parts written into one string allocated at its size.
    fn of_parts(
        chip: Part<'_>,
        hwirq: Option<Part<'_>>,
        trigger: Option<Part<'_>>,
        actions: Part<'_>,
        list: ActionList,
    ) -> Desc {
        let none = Part::Text("");
        let parts = [
            chip,
            hwirq.unwrap_or(none),
            trigger.unwrap_or(none),
            actions,
        ];
        let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut ends = [0u32; 3];
        for (i, part) in parts.into_iter().enumerate() {
            part.push_to(&mut text);
            if let Some(end) = ends.get_mut(i) {
                // A description comes from files of at most READ_LIMIT (32 MiB) each.
                *end = u32::try_from(text.len()).unwrap_or(u32::MAX);
            }
        }
        let mut flags = 0;
        if hwirq.is_some() {
            flags |= HWIRQ;
        }
        if trigger.is_some() {
            flags |= TRIGGER;
        }
        if list == ActionList::Sys {
            flags |= SYS_ACTIONS;
        }
        Desc {
            text: text.into_boxed_str(),
            chip_end: ends[0],
            hwirq_end: ends[1],
            trigger_end: ends[2],
            flags,
        }
    }

    fn part(&self, from: u32, to: u32) -> &str {
        self.text.get(from as usize..to as usize).unwrap_or("")
    }

    pub(crate) fn chip(&self) -> &str {
        self.part(0, self.chip_end)
    }

    pub(crate) fn hwirq(&self) -> Option<&str> {
        (self.flags & HWIRQ != 0).then(|| self.part(self.chip_end, self.hwirq_end))
    }

    pub(crate) fn trigger(&self) -> Option<&str> {
        (self.flags & TRIGGER != 0).then(|| self.part(self.hwirq_end, self.trigger_end))
    }

    /// The actions text as it was given, and how it splits.
    pub(crate) fn action_text(&self) -> (&str, ActionList) {
        let text = self.text.get(self.trigger_end as usize..).unwrap_or("");
        if self.flags & SYS_ACTIONS != 0 {
            (text, ActionList::Sys)
        } else {
            (text, ActionList::Proc)
        }
    }

    pub(crate) fn actions(&self) -> Actions<'_> {
        let (text, list) = self.action_text();
        Actions {
            rest: Some(text),
            list,
        }
    }

    /// The actions joined by `,`, or the chip when there is none.
    pub(crate) fn label(&self) -> String {
        let mut out = String::with_capacity(self.label_len());
        self.push_label(&mut out);
        out
    }

    /// The length of [`Desc::label`].
    pub(crate) fn label_len(&self) -> usize {
        let (mut len, mut actions) = (0, 0);
        for a in self.actions() {
            len += a.len();
            actions += 1;
        }
        match actions {
            0 => self.chip().len(),
            n => len + n - 1,
        }
    }

    /// Appends [`Desc::label`] to `out`.
    pub(crate) fn push_label(&self, out: &mut String) {
        let mut actions = self.actions().peekable();
        if actions.peek().is_none() {
            out.push_str(self.chip());
        }
        for (i, a) in actions.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(a);
        }
    }

    /// Splits the text after the counts of a numbered row of /proc/interrupts into
    /// chip, hwirq, flow or trigger, and actions. Layouts differ by architecture:
    ///
    /// - x86: `IO-APIC   5-edge      ACPI:Ged` (hwirq and flow joined by `-`)
    /// - ARM: `GICv3  27 Level     arch_timer`, `Tegra PCIe MSI   0 Edge      eth0`
    ///
    /// The chip name may hold spaces; it ends where the hwirq starts. Actions are
    /// separated by `, `. /sys/kernel/irq/N, when present, overrides all of this.
    pub(crate) fn from_proc(rest: &str) -> Desc {
        let is_num = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let x86 = |t: &str| {
            t.split_once('-')
                .is_some_and(|(h, f)| is_num(h) && !f.is_empty())
        };
        let level = |t: &str| t.eq_ignore_ascii_case("level") || t.eq_ignore_ascii_case("edge");
        // The tokens are looked at two at a time, with their byte offsets, never
        // collected: a row of millions of them would cost 16 bytes each.
        let offset = |t: &str| t.as_ptr() as usize - rest.as_ptr() as usize;
        let mut it = rest.split_whitespace().enumerate().peekable();
        let mut found = None;
        while let Some((i, t)) = it.next() {
            let next = it.peek().map(|(_, n)| *n);
            if i >= 1 && (x86(t) || (is_num(t) && next.is_some_and(level))) {
                found = Some((t, next));
                break;
            }
        }
        let unknown = || Desc::of_parts(Part::Words(rest), None, None, none(), ActionList::Proc);
        let Some((tok, next)) = found else {
            // Not a layout we know: keep the text as the chip, claim no actions.
            return unknown();
        };
        let (hwirq, trigger, after) = match (tok.split_once('-'), next) {
            (Some((h, f)), _) if x86(tok) => (h, f, tok),
            (_, Some(n)) => (tok, n, n),
            // An ARM hwirq is followed by its trigger: the layout was found by it.
            (_, None) => return unknown(),
        };
        let trigger = trigger.to_lowercase();
        Desc::of_parts(
            Part::Words(&rest[..offset(tok)]),
            Some(Part::Text(hwirq)),
            Some(Part::Text(&trigger)),
            Part::Words(&rest[offset(after) + after.len()..]),
            ActionList::Proc,
        )
    }
}

fn none() -> Part<'static> {
    Part::Text("")
}

/// The actions of an IRQ, in the order the kernel lists them.
#[derive(Clone, Debug)]
pub struct Actions<'a> {
    rest: Option<&'a str>,
    list: ActionList,
}

impl<'a> Iterator for Actions<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        loop {
            let rest = self.rest?;
            let sep = match self.list {
                ActionList::Proc => ", ",
                ActionList::Sys => ",",
            };
            let (item, more) = match rest.split_once(sep) {
                Some((item, more)) => (item, Some(more)),
                None => (rest, None),
            };
            self.rest = more;
            let item = match self.list {
                ActionList::Proc => item.trim(),
                ActionList::Sys => item,
            };
            if !item.is_empty() {
                return Some(item);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parts = (String, Option<String>, Option<String>, Vec<String>);

    fn split_description(rest: &str) -> Parts {
        let d = Desc::from_proc(rest);
        (
            d.chip().to_string(),
            d.hwirq().map(str::to_string),
            d.trigger().map(str::to_string),
            d.actions().map(str::to_string).collect(),
        )
    }

    #[test]
    fn description_with_several_actions() {
        let (chip, hwirq, trig, actions) =
            split_description("IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus");
        assert_eq!(chip, "IO-APIC");
        assert_eq!(hwirq.as_deref(), Some("16"));
        assert_eq!(trig.as_deref(), Some("fasteoi"));
        assert_eq!(actions, ["ehci_hcd:usb1", "i801_smbus"]);
    }

    #[test]
    fn description_layouts() {
        let d = split_description;
        assert_eq!(
            d("IR-PCI-MSI 327680-edge      xhci_hcd"),
            (
                "IR-PCI-MSI".into(),
                Some("327680".into()),
                Some("edge".into()),
                vec!["xhci_hcd".into()]
            )
        );
        assert_eq!(
            d("GICv3  27 Level     arch_timer"),
            (
                "GICv3".into(),
                Some("27".into()),
                Some("level".into()),
                vec!["arch_timer".into()]
            )
        );
        assert_eq!(
            d("Tegra PCIe MSI   0 Edge      eth0"),
            (
                "Tegra PCIe MSI".into(),
                Some("0".into()),
                Some("edge".into()),
                vec!["eth0".into()]
            )
        );
        let (chip, hwirq, _, actions) = d("IO-APIC   9-fasteoi");
        assert_eq!((chip.as_str(), hwirq.as_deref()), ("IO-APIC", Some("9")));
        assert!(actions.is_empty(), "an IRQ with no handler has no action");
        assert_eq!(d("weird"), ("weird".into(), None, None, vec![]));
        assert_eq!(
            d("X 5-edge  a ,  b c, ,d,e"),
            (
                "X".into(),
                Some("5".into()),
                Some("edge".into()),
                vec!["a".into(), "b c".into(), ",d,e".into()]
            )
        );
    }

    #[test]
    fn description_of_x86_vector_row() {
        let (chip, _, _, actions) =
            split_description("IR-PCI-MSIX-0000:00:14.0    0-edge      xhci_hcd");
        assert_eq!(chip, "IR-PCI-MSIX-0000:00:14.0");
        assert_eq!(actions, ["xhci_hcd"]);
    }

    #[test]
    fn parts_read_back_as_given() {
        let d = Desc::new("chip", Some(""), None, ",a, b,,c ", ActionList::Sys);
        assert_eq!((d.chip(), d.hwirq(), d.trigger()), ("chip", Some(""), None));
        assert_eq!(d.actions().collect::<Vec<_>>(), ["a", " b", "c "]);
        assert_eq!(d.label(), "a, b,c ");
        assert_eq!(d.label_len(), d.label().len());
        let none = Desc::new("IO-APIC", None, Some("Edge"), "", ActionList::Proc);
        assert_eq!((none.hwirq(), none.trigger()), (None, Some("Edge")));
        assert_eq!(none.label(), "IO-APIC");
        assert_eq!(none.label_len(), 7);
        assert_eq!(none.action_text(), ("", ActionList::Proc));
    }
}
