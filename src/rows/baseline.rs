//! Known failures: a baseline file lists case IDs (one per line, `#` comments) whose
//! failure is accepted. An unlisted failure fails the run; a listed case that now passes
//! fails it too, as stale ("remove the entry").

use std::collections::BTreeSet;
use std::path::Path;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    ids: BTreeSet<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read baseline {path}: {source}")]
pub struct BaselineError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

impl Baseline {
    pub fn parse(text: &str) -> Baseline {
        let ids = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or_default().trim())
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect();
        Baseline { ids }
    }

    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        std::fs::read_to_string(path)
            .map(|text| Baseline::parse(&text))
            .map_err(|source| BaselineError {
                path: path.display().to_string(),
                source,
            })
    }

    pub fn lists(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_comments() {
        let baseline = Baseline::parse("# known\nTOOL-007\n  ENV-003  # flaky server\n\n");
        assert!(baseline.lists("TOOL-007"));
        assert!(baseline.lists("ENV-003"));
        assert!(!baseline.lists("known"));
    }
}
