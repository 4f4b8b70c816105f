//! Links from a case's spec reference to the upstream specification at the protocol version
//! the run spoke: `docs/specification/lifecycle.md § Initialize` becomes a link to that page
//! and section of `microsoft/agent-host-protocol`, and `crate: ahp/src/reducers.rs` to the
//! file of the reference crates. The rest of the reference (our rule catalog, JSON-RPC) stays
//! text. Links are built only from characters a path or an anchor may hold, so a suite's
//! spec text can never inject markup through them.

/// The upstream repository the AHP specification lives in.
pub const UPSTREAM: &str = "https://github.com/microsoft/agent-host-protocol";

/// The release commit of protocol 1.0.0 (tags `spec/v1.0.0` and `rust/v1.0.0`; see
/// upstream/ahp/1.0.0/SOURCE.md).
pub const RELEASE_1_0_0: &str = "5f16d81bb7045b66d7bc768d244feab75002d943";

/// A piece of a spec reference: text, linked or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece<'a> {
    pub text: &'a str,
    pub url: Option<String>,
}

/// The git ref of the specification of `version`, or `None` when `version` is not an AHP
/// version (an AAP run's `AAP 3`, or several versions at once).
pub fn git_ref(version: &str) -> Option<String> {
    let plain = !version.is_empty()
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
    match version {
        "1.0.0" => Some(RELEASE_1_0_0.to_owned()),
        _ if plain => Some(format!("spec/v{version}")),
        _ => None,
    }
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, punctuation dropped.
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')
}

/// `spec` cut into text and links to the specification at `version` (all text when the
/// version has no upstream ref).
pub fn pieces<'a>(spec: &'a str, version: &str) -> Vec<Piece<'a>> {
    let Some(git_ref) = git_ref(version) else {
        return vec![Piece {
            text: spec,
            url: None,
        }];
    };
    let mut out = Vec::new();
    let mut plain_from = 0;
    let mut at = 0;
    while at < spec.len() {
        let boundary = at == 0 || !spec[..at].ends_with(path_char);
        let found = if boundary {
            link_at(spec, at, &git_ref)
        } else {
            None
        };
        match found {
            Some((end, url)) => {
                if plain_from < at {
                    out.push(Piece {
                        text: &spec[plain_from..at],
                        url: None,
                    });
                }
                out.push(Piece {
                    text: &spec[at..end],
                    url: Some(url),
                });
                at = end;
                plain_from = end;
            }
            None => at += spec[at..].chars().next().map_or(1, char::len_utf8),
        }
    }
    if plain_from < spec.len() {
        out.push(Piece {
            text: &spec[plain_from..],
            url: None,
        });
    }
    out
}

/// A link starting at byte `at`: a `docs/….md` page (with ` § Section` when one follows) or
/// `crate: name/src/file.rs`; its end and URL.
fn link_at(spec: &str, at: usize, git_ref: &str) -> Option<(usize, String)> {
    let rest = &spec[at..];
    if let Some(file) = rest.strip_prefix("crate: ") {
        let len = file.find(|c: char| !path_char(c)).unwrap_or(file.len());
        let path = file[..len].trim_end_matches('.');
        if path.contains("/src/") && path.ends_with(".rs") {
            let end = at + "crate: ".len() + path.len();
            return Some((
                end,
                format!("{UPSTREAM}/blob/{git_ref}/clients/rust/crates/{path}"),
            ));
        }
        return None;
    }
    if !rest.starts_with("docs/") {
        return None;
    }
    let len = rest.find(|c: char| !path_char(c)).unwrap_or(rest.len());
    let path = &rest[..len];
    let path = &path[..path.rfind(".md")? + 3];
    let page = format!("{UPSTREAM}/blob/{git_ref}/{path}");
    let after = &rest[path.len()..];
    if let Some(section) = after.strip_prefix(" § ") {
        let stop = [";", " (", " / ", " & "]
            .iter()
            .filter_map(|s| section.find(s))
            .min()
            .unwrap_or(section.len());
        let heading = section[..stop].trim_end();
        let slug = anchor(heading);
        if !slug.is_empty() {
            let end = at + path.len() + " § ".len() + heading.len();
            return Some((end, format!("{page}#{slug}")));
        }
    }
    Some((at + path.len(), page))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(spec: &str, version: &str) -> Vec<(String, Option<String>)> {
        pieces(spec, version)
            .into_iter()
            .map(|p| (p.text.to_owned(), p.url))
            .collect()
    }

    #[test]
    fn a_page_and_section_link_to_the_release() {
        let got = links(
            "docs/specification/lifecycle.md § Initialize Response",
            "1.0.0",
        );
        assert_eq!(
            got,
            [(
                "docs/specification/lifecycle.md § Initialize Response".to_owned(),
                Some(format!(
                    "{UPSTREAM}/blob/{RELEASE_1_0_0}/docs/specification/lifecycle.md#initialize-response"
                ))
            )]
        );
        let older = links("docs/specification/versioning.md § Negotiation", "0.9.0");
        assert_eq!(
            older[0].1.as_deref(),
            Some(
                "https://github.com/microsoft/agent-host-protocol/blob/spec/v0.9.0/docs/specification/versioning.md#negotiation"
            )
        );
    }

    #[test]
    fn the_rest_of_a_reference_stays_text() {
        let got = links(
            "RULES.md §17 INV-CHAT-1; crate: ahp/src/reducers.rs (end_turn)",
            "1.0.0",
        );
        assert_eq!(got[0], ("RULES.md §17 INV-CHAT-1; ".to_owned(), None));
        assert_eq!(got[1].0, "crate: ahp/src/reducers.rs");
        assert_eq!(
            got[1].1.as_deref(),
            Some(
                format!("{UPSTREAM}/blob/{RELEASE_1_0_0}/clients/rust/crates/ahp/src/reducers.rs")
                    .as_str()
            )
        );
        assert_eq!(got[2], (" (end_turn)".to_owned(), None));
        // A section ends where a note or a second section begins; a page without one links
        // the page.
        let got = links(
            "docs/specification/subscriptions.md § Snapshot views / Delivery preferences",
            "1.0.0",
        );
        assert!(got[0]
            .1
            .as_deref()
            .is_some_and(|u| u.ends_with("#snapshot-views")));
        assert_eq!(got[1].0, " / Delivery preferences");
        let got = links("docs/guide/state-model.md", "1.0.0");
        assert!(got[0]
            .1
            .as_deref()
            .is_some_and(|u| u.ends_with("/docs/guide/state-model.md")));
    }

    #[test]
    fn no_links_without_an_ahp_version() {
        for version in ["AAP 3", "1.0.0,0.9.0", "", "1.0.0\"><x"] {
            assert_eq!(
                links("docs/endpoints.md § GET /meta", version),
                [("docs/endpoints.md § GET /meta".to_owned(), None)],
                "{version}"
            );
        }
    }

    #[test]
    fn anchors_follow_github() {
        assert_eq!(
            anchor("Server Validation of Client Actions"),
            "server-validation-of-client-actions"
        );
        assert_eq!(
            anchor("Forward/Backward Compatibility"),
            "forwardbackward-compatibility"
        );
        assert_eq!(
            anchor("root/sessionSummaryChanged"),
            "rootsessionsummarychanged"
        );
        assert_eq!(anchor("`stream: \"none\"`"), "stream-none");
    }

    #[test]
    fn links_hold_no_markup() {
        let got = links("docs/specification/a\"><script>.md § x<y>\"z", "1.0.0");
        for (_, url) in got {
            if let Some(url) = url {
                assert!(!url.contains(['<', '>', '"', ' ']), "{url}");
            }
        }
    }
}
