//! `privq synth` and `privq pmw` refuse to read the domain from the private data:
//! the real binary exits non-zero with an error naming both fixes.

use std::process::Command;

fn nltcs() -> Option<String> {
    let dir = privq_host::data::shared_data_dir("the NLTCS domain test")?;
    dir.join("nltcs.csv").to_str().map(String::from)
}

#[test]
fn synth_and_pmw_without_a_domain_exit_non_zero_naming_both_fixes() {
    let Some(input) = nltcs() else { return };
    for argv in [
        vec!["synth", "--input", &input, "--epsilon", "1"],
        vec![
            "pmw",
            "--input",
            &input,
            "--epsilon",
            "1",
            "--rounds",
            "3",
            "--pure",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_privq"))
            .args(&argv)
            .output()
            .expect("run privq");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{argv:?}: {err}");
        assert!(out.stdout.is_empty(), "{argv:?} released something");
        assert!(
            err.contains("--domain FILE") && err.contains("--domain binary"),
            "{argv:?}: {err}"
        );
        // Only synth offers private discovery; pmw names the fix it has.
        assert_eq!(
            err.contains("--discover-domain"),
            argv[0] == "synth",
            "{err}"
        );
    }
}
