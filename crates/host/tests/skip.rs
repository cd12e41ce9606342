//! `testing::skip`: a message and a pass, or under `JITTERLAB_REQUIRE_LIVE=1` a failure.
//! The message is seen with the harness capturing the test's output, as `cargo test`
//! runs it: a skip is never silent. And a test binary that skipped ends with every skip
//! of the run so far, from the run's skip log.

use std::process::Command;

/// Run by `skip_fails_only_when_live_tests_are_required` in a copy of this test binary.
#[test]
#[ignore = "helper process for skip::skip_fails_only_when_live_tests_are_required"]
fn child_that_skips() {
    jitterlab_host::testing::skip("the condition of this test");
}

#[test]
fn skip_fails_only_when_live_tests_are_required() {
    let log = tempfile::tempdir().unwrap();
    let log = log.path().join("skips.log");
    let child = |require: Option<&str>| {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.env(jitterlab_host::testing::SKIP_LOG, &log);
        // Captured, as cargo test runs it: the skip's line must get through.
        c.args(["skip::child_that_skips", "--exact", "--ignored"]);
        match require {
            Some(v) => c.env("JITTERLAB_REQUIRE_LIVE", v),
            None => c.env_remove("JITTERLAB_REQUIRE_LIVE"),
        };
        let out = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            stdout.contains("1 passed") || stdout.contains("1 failed"),
            "{stdout}"
        );
        // A failure's panic message is in the harness's report, on stdout.
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            stdout,
        )
    };
    for (n, require) in [None, Some("0"), Some("")].into_iter().enumerate() {
        let (ok, stderr, _) = child(require);
        assert!(ok, "{require:?}: {stderr}");
        assert!(
            stderr.contains("skipped (live test): the condition of this test, at ")
                && stderr.contains("tests/skip.rs:"),
            "{stderr}"
        );
        // Its exit lists the skips of the run so far: each child's, one more each time.
        let summary = &stderr[stderr.find("live tests skipped in this test run").unwrap()..];
        assert!(
            summary.contains(&format!("so far: {} ", n + 1)),
            "{summary}"
        );
        assert_eq!(summary.matches("  skipped (live test): ").count(), n + 1);
    }
    let (ok, _, report) = child(Some("1"));
    assert!(!ok, "{report}");
    assert!(
        report.contains("JITTERLAB_REQUIRE_LIVE=1 but the condition of this test"),
        "{report}"
    );
    assert!(
        report.contains("tests/skip.rs"),
        "the caller's line: {report}"
    );
}
