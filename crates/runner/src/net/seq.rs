//! The accounting of the multicast workload's sequence numbers
//! ([`mcast`](super::mcast)): received, lost, reordered and duplicated messages,
//! in constant memory whatever the run's length.

/// How far behind the highest sequence number a late message is still told from a
/// duplicate; one further behind counts as a duplicate.
pub const WINDOW: u64 = 1 << 20;

/// The accounting of sequence numbers as they arrive.
///
/// A number above the highest seen counts as received, and those skipped over as
/// lost; one below it that was counted lost counts as received and reordered (and
/// no longer lost); one already received counts as duplicated (and so does one
/// more than [`WINDOW`] below the highest, which cannot be told apart).
#[derive(Clone, Debug)]
pub struct SeqStats {
    /// Distinct messages received.
    pub received: u64,
    /// Messages missing (skipped over, or never sent on after [`SeqStats::finish`]).
    pub lost: u64,
    /// Messages that came after a higher number.
    pub reordered: u64,
    /// Copies of a message already received.
    pub duplicated: u64,
    /// One past the highest number seen.
    next: u64,
    /// Whether each of the last [`WINDOW`] numbers came, at `seq % WINDOW`.
    seen: Vec<u64>,
}

impl Default for SeqStats {
    fn default() -> SeqStats {
        SeqStats::new()
    }
}

impl SeqStats {
    /// Nothing received yet.
    pub fn new() -> SeqStats {
        SeqStats {
            received: 0,
            lost: 0,
            reordered: 0,
            duplicated: 0,
            next: 0,
            seen: vec![0; (WINDOW / 64) as usize],
        }
    }

    /// One past the highest number seen (0 before any).
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Counts the arrival of `seq`; true if it was received for the first time.
    pub fn record(&mut self, seq: u64) -> bool {
        if seq >= self.next {
            let gap = seq - self.next;
            self.lost += gap;
            if gap >= WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.next..seq {
                    self.set(s, false);
                }
            }
            self.set(seq, true);
            self.next = seq + 1;
            self.received += 1;
            return true;
        }
        if self.next - seq > WINDOW || self.get(seq) {
            self.duplicated += 1;
            return false;
        }
        self.set(seq, true);
        self.lost -= 1;
        self.reordered += 1;
        self.received += 1;
        true
    }

    /// Ends the count once `sent` messages (numbered from 0) were sent: those above
    /// the highest received are lost too.
    pub fn finish(&mut self, sent: u64) {
        if sent > self.next {
            self.lost += sent - self.next;
            self.next = sent;
        }
    }

    fn get(&self, seq: u64) -> bool {
        let bit = seq % WINDOW;
        self.seen[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    fn set(&mut self, seq: u64, on: bool) {
        let bit = seq % WINDOW;
        let word = &mut self.seen[(bit / 64) as usize];
        if on {
            *word |= 1 << (bit % 64);
        } else {
            *word &= !(1 << (bit % 64));
        }
    }
}
