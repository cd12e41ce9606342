use super::*;
use proptest::prelude::*;

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).expect(s)
}

#[test]
fn list_forms_from_sysfs() {
    assert_eq!(list("0-1\n"), CpuSet::first_n(2));
    assert_eq!(list(""), CpuSet::new());
    assert_eq!(list("\n"), CpuSet::new());
    assert_eq!(
        list("0-3,8,10-11").iter().collect::<Vec<_>>(),
        [0, 1, 2, 3, 8, 10, 11]
    );
    assert_eq!(list("5").to_string(), "5");
    assert_eq!(list("0,1").to_string(), "0-1");
    assert_eq!(list("3,1,2").to_string(), "1-3");
}

#[test]
fn stride_form() {
    assert_eq!(list("0-15:2/4").to_string(), "0-1,4-5,8-9,12-13");
    assert_eq!(list("0-7:1/1").to_string(), "0-7");
}

#[test]
fn mask_forms_from_proc() {
    assert_eq!(CpuSet::parse_mask("3\n").unwrap(), CpuSet::first_n(2));
    assert_eq!(CpuSet::parse_mask("0").unwrap(), CpuSet::new());
    assert_eq!(
        CpuSet::parse_mask("ff,ffffffff").unwrap(),
        CpuSet::first_n(40)
    );
    assert_eq!(CpuSet::parse_mask("0x10").unwrap().to_string(), "4");
    // Mems_allowed on x86 is 32 groups wide.
    let mems = format!("{}00000001", "00000000,".repeat(31));
    assert_eq!(CpuSet::parse_mask(&mems).unwrap().to_string(), "0");
    // 128 CPUs, all set; the kernel pads every group but the first.
    let all = "ffffffff,ffffffff,ffffffff,ffffffff";
    assert_eq!(CpuSet::parse_mask(all).unwrap(), CpuSet::first_n(128));
    assert_eq!(CpuSet::first_n(128).to_mask_string(), all);
}

#[test]
fn mask_printing_width() {
    assert_eq!(CpuSet::new().to_mask_string(), "0");
    assert_eq!(CpuSet::first_n(2).to_mask_string(), "3");
    assert_eq!(CpuSet::first_n(2).to_mask_string_width(2), "3");
    assert_eq!(CpuSet::first_n(2).to_mask_string_width(16), "0003");
    assert_eq!(CpuSet::first_n(2).to_mask_string_width(33), "0,00000003");
    assert_eq!(list("32").to_mask_string(), "1,00000000");
    assert_eq!(list("0,63,64").to_mask_string(), "1,80000000,00000001");
}

#[test]
fn set_operations() {
    let a = list("0-7");
    let b = list("4-11");
    assert_eq!(a.union(&b), list("0-11"));
    assert_eq!(a.intersection(&b), list("4-7"));
    assert_eq!(a.difference(&b), list("0-3"));
    assert!(list("4-5").is_subset(&a));
    assert!(!b.is_subset(&a));
    assert!(a.intersects(&b));
    assert!(!list("0-1").intersects(&list("64-65")));
    assert_eq!(list("64").difference(&list("64")), CpuSet::new());
    assert_eq!(list("1,200").last(), Some(200));
    assert_eq!(list("1,200").first(), Some(1));
    let mut s = list("70");
    s.remove(70);
    assert!(s.is_empty());
}

#[test]
fn list_errors_name_column_and_expectation() {
    let e = CpuSet::parse_list("0-a").unwrap_err();
    assert_eq!(e.column, 3);
    assert_eq!(
        e.to_string(),
        "invalid CPU list \"0-a\" at column 3: expected a CPU number after '-'"
    );
    assert_eq!(CpuSet::parse_list("3-1").unwrap_err().column, 1);
    assert_eq!(CpuSet::parse_list("1,,2").unwrap_err().column, 3);
    assert_eq!(CpuSet::parse_list("1;2").unwrap_err().column, 2);
    assert_eq!(CpuSet::parse_list("-1").unwrap_err().column, 1);
    assert_eq!(CpuSet::parse_list("0-").unwrap_err().column, 3);
    assert_eq!(CpuSet::parse_list("1,").unwrap_err().column, 3);
    assert_eq!(CpuSet::parse_list("0-7:3/2").unwrap_err().column, 1);
    assert_eq!(CpuSet::parse_list("0-7:3").unwrap_err().column, 6);
    let big = CpuSet::parse_list("0-4000000000").unwrap_err();
    assert_eq!(big.expected, "a CPU number below 65536");
    assert_eq!(big.column, 3);
}

#[test]
fn errors_of_long_inputs_hold_an_excerpt() {
    let long = format!("{}x{}", "0,".repeat(100), ",1".repeat(100));
    let e = CpuSet::parse_list(&long).unwrap_err();
    assert_eq!(e.column, 201);
    assert_eq!(
        e.input,
        format!("...{}x{}...", "0,".repeat(20), ",1".repeat(19) + ",")
    );
    let e = CpuSet::parse_list(&format!("x{}", ",1".repeat(100))).unwrap_err();
    assert_eq!((e.column, e.input.len()), (1, 83));
    assert!(e.input.starts_with("x,1"), "{}", e.input);
    let e = CpuSet::parse_list(&format!("{}é", "1,".repeat(100))).unwrap_err();
    assert_eq!(e.column, 201);
    assert!(
        e.input.starts_with("...") && e.input.ends_with("é"),
        "{}",
        e.input
    );
    let short = "0,".repeat(39) + "x";
    assert_eq!(CpuSet::parse_list(&short).unwrap_err().input, short);
}

#[test]
fn last_cpu_as_n() {
    let with = |s: &str| CpuSet::parse_list_with_last(s, 15);
    assert_eq!(with("2-N").unwrap().to_string(), "2-15");
    assert_eq!(with("N").unwrap().to_string(), "15");
    assert_eq!(with("0-N:1/4").unwrap().to_string(), "0,4,8,12");
    assert_eq!(with("N:1/4,1").unwrap().to_string(), "1,15");
    assert_eq!(with("1-3").unwrap(), list("1-3"));
    // Only at a range's ends, once, and never in the plain list form.
    assert_eq!(with("NN").unwrap_err().column, 2);
    assert_eq!(with("N5").unwrap_err().column, 2);
    assert_eq!(with("0-7:N/4").unwrap_err().column, 5);
    assert_eq!(with("N-3").unwrap_err().column, 1);
    assert_eq!(CpuSet::parse_list("2-N").unwrap_err().column, 3);
}

#[test]
fn mask_errors_name_column_and_expectation() {
    let e = CpuSet::parse_mask("fg").unwrap_err();
    assert_eq!(e.column, 2);
    assert_eq!(e.form, "mask");
    assert_eq!(CpuSet::parse_mask("").unwrap_err().expected, "a hex digit");
    assert_eq!(CpuSet::parse_mask("1,").unwrap_err().column, 3);
    assert_eq!(CpuSet::parse_mask("123456789").unwrap_err().column, 9);
    let huge = format!("1{}", ",00000000".repeat(2048));
    assert_eq!(
        CpuSet::parse_mask(&huge).unwrap_err().expected,
        "a mask with no CPU at or above 65536"
    );
}

#[test]
fn serde_uses_the_list_form() {
    let json = serde_json::to_string(&list("0-3,8")).unwrap();
    assert_eq!(json, "\"0-3,8\"");
    let back: CpuSet = serde_json::from_str(&json).unwrap();
    assert_eq!(back, list("0-3,8"));
    assert!(serde_json::from_str::<CpuSet>("\"x\"").is_err());
}

fn arb_set() -> impl Strategy<Value = CpuSet> {
    prop_oneof![
        proptest::collection::vec(0u32..8, 0..8),
        proptest::collection::vec(0u32..130, 0..40),
        proptest::collection::vec(0u32..4096, 0..200),
    ]
    .prop_map(|cpus| cpus.into_iter().collect())
}

proptest! {
    #[test]
    fn list_round_trip(set in arb_set()) {
        prop_assert_eq!(CpuSet::parse_list(&set.to_string()).unwrap(), set);
    }

    #[test]
    fn mask_round_trip(set in arb_set(), extra in 0u32..300) {
        prop_assert_eq!(CpuSet::parse_mask(&set.to_mask_string()).unwrap(), set.clone());
        let width = set.last().map_or(0, |l| l + 1) + extra;
        prop_assert_eq!(CpuSet::parse_mask(&set.to_mask_string_width(width)).unwrap(), set);
    }

    #[test]
    fn iter_matches_contains(set in arb_set()) {
        let cpus: Vec<u32> = set.iter().collect();
        prop_assert_eq!(cpus.len(), set.len());
        prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(cpus.iter().all(|&c| set.contains(c)));
        prop_assert_eq!(cpus.last().copied(), set.last());
    }

    #[test]
    fn algebra(a in arb_set(), b in arb_set()) {
        let u = a.union(&b);
        let i = a.intersection(&b);
        prop_assert_eq!(u.len() + i.len(), a.len() + b.len());
        prop_assert!(i.is_subset(&a) && i.is_subset(&b));
        prop_assert!(a.is_subset(&u));
        prop_assert_eq!(a.difference(&b).union(&i), a.clone());
        prop_assert_eq!(a.intersects(&b), !i.is_empty());
    }

    #[test]
    fn parsers_never_panic(s in "[0-9a-fx,:/ -]{0,40}") {
        let _ = CpuSet::parse_list(&s);
        let _ = CpuSet::parse_mask(&s);
    }
}
