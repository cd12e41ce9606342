//! The fuzz target's body (fuzz/fuzz_targets/ctf.rs) over mutations of its seeds, for
//! machines without cargo-fuzz: no panic, no hang, errors where they belong.

use jitterlab_trace::ctf::CtfTrace;
use jitterlab_trace::{ErrorKind, EventSource, Location};

use super::synth::{fuzz_input, metadata, packetize, sample};

/// As the fuzz target does.
fn check(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let m = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (metadata, rest) = rest.split_at(m);
    let (cut, bytes) = rest
        .split_first_chunk::<2>()
        .map_or((0, &[][..]), |(c, b)| (u16::from_le_bytes(*c) as usize, b));
    let (a, b) = bytes.split_at(cut.min(bytes.len()));
    let streams = vec![
        ("channel0_0".to_string(), a.to_vec()),
        ("channel0_1".to_string(), b.to_vec()),
    ];
    for lenient in [false, true] {
        let t = match CtfTrace::from_parts(metadata, streams.clone(), lenient) {
            Ok(t) => t,
            Err(e) => {
                assert!(
                    matches!(
                        e.location,
                        Location::Line(_) | Location::Offset(_) | Location::Whole
                    ),
                    "{e}"
                );
                continue;
            }
        };
        let _ = (t.cmdlines(), t.tgids(), t.irq_names());
        let mut ev = t.events().expect("events");
        loop {
            match ev.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    assert!(!lenient, "lenient mode failed: {e}");
                    assert!(matches!(e.location, Location::Offset(_)), "{e}");
                    assert!(
                        matches!(
                            e.kind,
                            ErrorKind::Truncated | ErrorKind::Corrupt | ErrorKind::Limit
                        ),
                        "{e}"
                    );
                    break;
                }
            }
        }
        let mut raw = t.raw_events().expect("raw events");
        while let Ok(Some(_)) = raw.next_raw() {}
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_traces_never_panic() {
    let mut seeds = Vec::new();
    for be in [false, true] {
        let (meta, streams) = sample(be);
        seeds.push(fuzz_input(meta.as_bytes(), &streams));
        seeds.push(fuzz_input(&packetize(&meta, be, 300), &streams));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for seed in &seeds {
        check(seed);
        let meta_end = 4 + u32::from_le_bytes(seed[..4].try_into().unwrap()) as usize;
        for round in 0..1500 {
            let mut d = seed.clone();
            match round % 5 {
                // Stream bytes: flip a few.
                0 | 1 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = meta_end + rng.below(d.len() - meta_end);
                        d[i] ^= 1 << rng.below(8);
                    }
                }
                // A stream byte set to an extreme.
                2 => {
                    let i = meta_end + rng.below(d.len() - meta_end);
                    d[i] = [0, 0xff, 0x7f, 0x80][rng.below(4)];
                }
                // The input cut short.
                3 => d.truncate(rng.below(d.len())),
                // The metadata: a character replaced.
                _ => {
                    let i = 4 + rng.below(meta_end - 4);
                    d[i] = b"{};:=[]<>_0 9az.\"*"[rng.below(18)];
                }
            }
            check(&d);
        }
    }
}

#[test]
fn odd_metadata_is_refused_with_a_line() {
    let base = metadata(false, false);
    for (from, to) in [
        ("size = 27;", "size = 65;"),
        ("size = 27;", "size = 0;"),
        ("align(32)", "align(3)"),
        ("map = clock.monotonic.value", "map = clock.nope.value"),
        ("variant <id>", "variant <nope>"),
        ("_vals[_n]", "_vals[_kind]"),
        ("exp_dig", "exp_dig"),
        ("enum : uint8_t", "enum : string"),
        ("stream_id = 0;\n\tfields", "stream_id = 9;\n\tfields"),
    ] {
        let text = base.replacen(from, to, 1);
        if text == base {
            continue;
        }
        let (_, streams) = sample(false);
        match CtfTrace::from_parts(text.as_bytes(), streams, false) {
            Err(e) => assert!(
                matches!(e.location, Location::Line(_)),
                "{from} -> {to}: {e}"
            ),
            Ok(t) => {
                // Accepted metadata must still read without a panic.
                let mut ev = t.events().unwrap();
                while let Ok(Some(_)) = ev.next_event() {}
            }
        }
    }
    let e = CtfTrace::from_parts(
        b"trace { byte_order = le; }; event { fields := struct { floating_point { exp_dig = 5; mant_dig = 11; } x; }; };",
        Vec::new(),
        false,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
}
