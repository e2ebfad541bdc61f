//! The documentation says what the build does: checks that fail when a
//! man page claims a feature is missing, or the README's install line
//! stops finding the pages.

use std::path::{Path, PathBuf};

fn pages() -> Vec<PathBuf> {
    let man = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut out = Vec::new();
    for section in ["man1", "man7"] {
        for e in std::fs::read_dir(man.join(section)).expect("man section") {
            out.push(e.expect("entry").path());
        }
    }
    out.sort();
    out
}

#[test]
fn no_man_page_claims_a_feature_is_missing() {
    let claims = regex::Regex::new(
        r"(?i)not (yet )?(available|implemented|supported) in this build|this build (has|keeps) no|not yet",
    )
    .unwrap();
    let mut found = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (n, line) in text.lines().enumerate() {
            if claims.is_match(line) {
                found.push(format!("{}:{}: {line}", page.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "check these against the build:\n{}",
        found.join("\n")
    );
}

#[test]
fn pages_sit_where_manpath_finds_them() {
    let pages = pages();
    for name in ["man1/zut.1", "man1/zut-ext.1", "man7/zut-extensions.7"] {
        assert!(
            pages.iter().any(|p| p.ends_with(name)),
            "man/{name} is missing: {pages:?}"
        );
    }
    for p in &pages {
        let section = p.parent().unwrap().file_name().unwrap().to_string_lossy();
        let ext = p.extension().unwrap().to_string_lossy();
        assert_eq!(
            section,
            format!("man{ext}"),
            "{} is in the wrong section",
            p.display()
        );
    }
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains(r#"MANPATH="$PWD/man:$MANPATH""#));
}

#[test]
fn every_page_formats_without_groff_warnings() {
    let pages = pages();
    let out = match std::process::Command::new("groff")
        .args(["-man", "-ww", "-z"])
        .args(&pages)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIPPED the groff check: groff cannot run: {e}");
            return;
        }
    };
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.trim().is_empty(),
        "groff -man -ww -z man/*/*:\n{warnings}"
    );
}
