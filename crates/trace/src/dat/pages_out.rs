//! Records into ring-buffer pages, as the kernel's ring buffer lays them out (the format
//! [`crate::ringbuf`] reads): for writers of .dat files from events that were not
//! recorded by ftrace (a converted LTTng trace, a synthetic trace).
//!
//! Each page starts with its 64-bit timestamp and a commit word (a kernel `long`), then
//! the records: a 32-bit header of 5 bits `type_len` and 27 bits of time delta from the
//! previous record (the page timestamp for the first), a time extend (`type_len` 30)
//! before a record whose delta does not fit 27 bits, the length in a second word when
//! the payload is over 112 bytes (`type_len` 0). Events lost before a page set its
//! commit word's missed-events bit, with their count stored after the data when known
//! (`RB_MISSED_EVENTS`, `RB_MISSED_STORED`), as `trace_pipe_raw` hands them out.

use crate::format::Endian;
use crate::ringbuf::{PageLayout, MISSED_EVENTS, MISSED_STORED, TYPE_TIME_EXTEND};

/// `events/header_page` of a kernel with 8-byte longs and 4096-byte pages.
pub const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

/// `events/header_event`: the record header the encoder writes.
pub const HEADER_EVENT: &str = "# compressed entry header\n\
\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\
\n\
\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\
\tdata max type_len  == 28\n";

const DELTA_BITS: u32 = 27;
const DELTA_MASK: u64 = (1 << DELTA_BITS) - 1;
/// The largest delta a time extend carries (27 bits in the header, 32 in the next word).
const MAX_EXTENDED: u64 = (1 << (DELTA_BITS + 32)) - 1;
/// The largest payload with its length in `type_len` (28 words).
const MAX_SMALL: usize = 28 * 4;

/// Why a record was not written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The payload does not fit one page, even an empty one.
    TooLarge {
        /// Its size, bytes.
        size: usize,
        /// The most a page holds, bytes.
        max: usize,
    },
    /// The record is older than the one before it on the same CPU.
    BackInTime {
        /// The record's timestamp.
        ts: u64,
        /// The previous record's.
        last: u64,
    },
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::TooLarge { size, max } => write!(
                f,
                "a record of {size} bytes does not fit a ring-buffer page (at most {max})"
            ),
            EncodeError::BackInTime { ts, last } => write!(
                f,
                "a record at {ts} comes after one at {last} on the same CPU (records of a \
                 CPU must be in time order)"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Encodes one CPU's records, in time order, into whole ring-buffer pages.
///
/// ```
/// use jitterlab_trace::dat::PageEncoder;
/// use jitterlab_trace::format::Endian;
/// use jitterlab_trace::ringbuf::{PageLayout, PageReader, Missed};
///
/// let layout = PageLayout::new(Endian::Little, 8, 4096);
/// let mut enc = PageEncoder::new(layout);
/// enc.record(1_000, &7u16.to_le_bytes()).unwrap();
/// enc.lost(Some(3));
/// enc.record(1_000 + (1 << 30), &8u16.to_le_bytes()).unwrap();
/// let pages = enc.finish();
/// assert_eq!(pages.len(), 2 * 4096);
/// let mut second = PageReader::new(&layout, &pages[4096..]).unwrap();
/// assert_eq!(second.missed(), Missed::Count(3));
/// let rec = second.next_record().unwrap().unwrap();
/// assert_eq!((rec.ts, rec.event_id(Endian::Little)), (1_000 + (1 << 30), Some(8)));
/// ```
#[derive(Clone, Debug)]
pub struct PageEncoder {
    layout: PageLayout,
    /// Whole pages not yet taken.
    done: Vec<u8>,
    /// The page being filled: its timestamp (`None` before its first record), the last
    /// record's time, and its data.
    base: Option<u64>,
    last: u64,
    body: Vec<u8>,
    /// Events lost before the page being filled: `Some(None)` some, count unknown.
    missed: Option<Option<u64>>,
}

impl PageEncoder {
    /// An encoder of pages laid out as `layout` says.
    pub fn new(layout: PageLayout) -> PageEncoder {
        PageEncoder {
            layout,
            done: Vec::new(),
            base: None,
            last: 0,
            body: Vec::new(),
            missed: None,
        }
    }

    /// The largest payload a record may have.
    pub fn max_payload(&self) -> usize {
        // An empty page: its header, a record header with its length word, and room
        // for a stored missed-events count.
        let reserved = self.layout.data_offset + 8 + self.layout.commit_size;
        self.layout.page_size.saturating_sub(reserved) & !3
    }

    /// Appends a record of `payload` (its event id first) at `ts`, starting a new page
    /// when it does not fit the current one.
    pub fn record(&mut self, ts: u64, payload: &[u8]) -> Result<(), EncodeError> {
        let max = self.max_payload();
        if payload.len() > max {
            return Err(EncodeError::TooLarge {
                size: payload.len(),
                max,
            });
        }
        // `last` is 0 before the first record.
        if ts < self.last {
            return Err(EncodeError::BackInTime {
                ts,
                last: self.last,
            });
        }
        let len = payload.len().div_ceil(4) * 4;
        let head = if len <= MAX_SMALL && !payload.is_empty() {
            4
        } else {
            8
        };
        let delta = ts - self.last;
        let extend = if delta > DELTA_MASK { 8 } else { 0 };
        let fits = self.base.is_some()
            && delta <= MAX_EXTENDED
            && self.layout.data_offset + self.body.len() + extend + head + len + self.reserve()
                <= self.layout.page_size;
        if !fits {
            self.close();
            self.base = Some(ts);
            self.last = ts;
        }
        let mut delta = ts - self.last;
        if delta > DELTA_MASK {
            self.word(TYPE_TIME_EXTEND, delta & DELTA_MASK);
            self.put_u32((delta >> DELTA_BITS) as u32);
            delta = 0;
        }
        if head == 4 {
            self.word((len / 4) as u32, delta);
        } else {
            self.word(0, delta);
            self.put_u32(len as u32 + 4);
        }
        self.body.extend_from_slice(payload);
        self.body.resize(self.body.len() + len - payload.len(), 0);
        self.last = ts;
        Ok(())
    }

    /// Events were lost here: `count` of them, when known. The page being filled is
    /// closed; the next one says they were lost before it (an empty page says so when no
    /// record follows).
    pub fn lost(&mut self, count: Option<u64>) {
        self.close();
        self.missed = Some(match (self.missed, count) {
            (Some(Some(a)), Some(b)) => Some(a.saturating_add(b)),
            (Some(None), _) | (_, None) => None,
            (None, Some(b)) => Some(b),
        });
    }

    /// Whole pages made and not yet taken.
    pub fn ready(&self) -> usize {
        self.done.len() / self.layout.page_size.max(1)
    }

    /// The whole pages made so far, taken out of the encoder (for a writer that takes
    /// pages as they come).
    pub fn take_pages(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.done)
    }

    /// The pages not yet taken, the last one closed.
    pub fn finish(mut self) -> Vec<u8> {
        if self.missed.is_some() && self.base.is_none() {
            // Losses after the last record: an empty page tells them.
            self.base = Some(self.last);
        }
        self.close();
        self.done
    }

    /// Bytes kept free after the data for the missed-events count.
    fn reserve(&self) -> usize {
        match self.missed {
            Some(Some(_)) => self.layout.commit_size,
            _ => 0,
        }
    }

    /// Writes the page being filled, if it was started.
    fn close(&mut self) {
        let Some(base) = self.base.take() else {
            return;
        };
        let l = self.layout;
        let start = self.done.len();
        self.done.resize(start + l.page_size, 0);
        let page = &mut self.done[start..];
        put(l.endian, &mut page[l.ts_offset..], base, 8);
        let mut commit = self.body.len() as u64;
        match self.missed.take() {
            Some(Some(n)) => {
                commit |= MISSED_EVENTS | MISSED_STORED;
                let at = l.data_offset + self.body.len();
                put(l.endian, &mut page[at..], n, l.commit_size);
            }
            Some(None) => commit |= MISSED_EVENTS,
            None => {}
        }
        put(
            l.endian,
            &mut page[l.commit_offset..],
            commit,
            l.commit_size,
        );
        page[l.data_offset..l.data_offset + self.body.len()].copy_from_slice(&self.body);
        self.body.clear();
    }

    fn word(&mut self, type_len: u32, delta: u64) {
        let delta = (delta & DELTA_MASK) as u32;
        let w = match self.layout.endian {
            Endian::Little => (delta << 5) | type_len,
            Endian::Big => (type_len << DELTA_BITS) | delta,
        };
        self.put_u32(w);
    }

    fn put_u32(&mut self, v: u32) {
        let at = self.body.len();
        self.body.resize(at + 4, 0);
        put(self.layout.endian, &mut self.body[at..], u64::from(v), 4);
    }
}

/// `v` as `size` bytes (1, 2, 4 or 8) at the start of `to` (which is long enough).
pub(crate) fn put(e: Endian, to: &mut [u8], v: u64, size: usize) {
    let bytes = match e {
        Endian::Little => v.to_le_bytes(),
        Endian::Big => v.to_be_bytes(),
    };
    let b = match e {
        Endian::Little => &bytes[..size],
        Endian::Big => &bytes[8 - size..],
    };
    to[..size].copy_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ringbuf::{Missed, PageReader};

    /// A page's missed events and its records (timestamp, payload).
    type Page = (Missed, Vec<(u64, Vec<u8>)>);

    fn read(layout: &PageLayout, pages: &[u8]) -> Vec<Page> {
        pages
            .chunks(layout.page_size)
            .map(|p| {
                let mut r = PageReader::new(layout, p).unwrap();
                let mut recs = Vec::new();
                while let Some(rec) = r.next_record().unwrap() {
                    recs.push((rec.ts, rec.data.to_vec()));
                }
                (r.missed(), recs)
            })
            .collect()
    }

    #[test]
    fn records_round_trip_through_the_reader() {
        for endian in [Endian::Little, Endian::Big] {
            let layout = PageLayout::new(endian, 8, 4096);
            let mut enc = PageEncoder::new(layout);
            let mut want = Vec::new();
            let mut ts = 1_412_670_961_211_260_539u64;
            for i in 0..400u64 {
                // Small and long records, short and long gaps (time extends).
                let len = [2, 7, 40, 113, 300][i as usize % 5];
                let payload: Vec<u8> = (0..len).map(|b| (b as u64 + i) as u8).collect();
                ts += [1, 5_000, 1 << 27, (1 << 40) + 3][i as usize % 4];
                enc.record(ts, &payload).unwrap();
                want.push((ts, payload));
            }
            let pages = enc.finish();
            assert_eq!(pages.len() % 4096, 0);
            let got: Vec<(u64, Vec<u8>)> = read(&layout, &pages)
                .into_iter()
                .flat_map(|(m, r)| {
                    assert_eq!(m, Missed::None);
                    r
                })
                .collect();
            assert_eq!(got.len(), want.len());
            for ((gt, gp), (wt, wp)) in got.iter().zip(&want) {
                assert_eq!(gt, wt);
                // Payloads are padded to whole words.
                assert_eq!(&gp[..wp.len()], &wp[..]);
                assert!(gp[wp.len()..].iter().all(|&b| b == 0));
            }
        }
    }

    #[test]
    fn losses_mark_the_next_page() {
        let layout = PageLayout::new(Endian::Little, 8, 4096);
        let mut enc = PageEncoder::new(layout);
        enc.record(10, &[1, 0]).unwrap();
        enc.lost(Some(5));
        enc.lost(Some(2));
        enc.record(20, &[2, 0]).unwrap();
        enc.lost(None);
        enc.record(30, &[3, 0]).unwrap();
        enc.lost(Some(1));
        let pages = read(&layout, &enc.finish());
        let missed: Vec<Missed> = pages.iter().map(|p| p.0).collect();
        assert_eq!(
            missed,
            [
                Missed::None,
                Missed::Count(7),
                Missed::Unknown,
                Missed::Count(1)
            ]
        );
        assert!(pages[3].1.is_empty());
        assert_eq!(pages[2].1, [(30, vec![3, 0, 0, 0])]);
    }

    #[test]
    fn bad_records_are_refused() {
        let layout = PageLayout::new(Endian::Little, 8, 4096);
        let mut enc = PageEncoder::new(layout);
        let max = enc.max_payload();
        assert!(enc.record(5, &vec![0; max]).is_ok());
        assert_eq!(
            enc.record(6, &vec![0; max + 1]),
            Err(EncodeError::TooLarge { size: max + 1, max })
        );
        assert_eq!(
            enc.record(4, &[0, 0]),
            Err(EncodeError::BackInTime { ts: 4, last: 5 })
        );
        assert_eq!(read(&layout, &enc.finish()).len(), 1);
    }
}
