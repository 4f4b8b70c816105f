//! Faulty variants of the built-in AAP server. Each one breaks exactly one rule of
//! `aap/RULES.md` (named by its stable ID), injected at a seam of the server, so every AAP
//! check of the harness can be shown to fail against the one bug it exists for.

use std::fmt;
use std::str::FromStr;

macro_rules! aap_faults {
    ($( $variant:ident => ($name:literal, $rule:literal, $what:literal), )*) => {
        /// A deliberate single violation of one AAP rule.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum AapFault {
            $(
                #[doc = $what]
                $variant,
            )*
        }

        impl AapFault {
            /// Every fault, in catalog order.
            pub const ALL: &'static [AapFault] = &[$(AapFault::$variant,)*];

            /// The `--fault` name.
            pub fn name(self) -> &'static str {
                match self { $(AapFault::$variant => $name,)* }
            }

            /// The aap/RULES.md ID of the one rule this fault breaks.
            pub fn rule(self) -> &'static str {
                match self { $(AapFault::$variant => $rule,)* }
            }

            /// One sentence on what the faulty server does wrong.
            pub fn description(self) -> &'static str {
                match self { $(AapFault::$variant => $what,)* }
            }
        }
    };
}

aap_faults! {
    DeltaDropsTurnStop => ("delta-drops-turn-stop", "AAP-SSE-001", "Ends a delta-mode stream without its final turn_stop event."),
    MessageDropsAfterTurnStart => ("message-drops-after-turn-start", "AAP-SSE-001", "Ends a message-mode stream right after turn_start: no content, no turn_stop."),
}

impl fmt::Display for AapFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--fault` name that is not in the AAP catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown AAP fault {0:?} (`ahpspec serve --protocol aap --fault list` lists them)")]
pub struct UnknownAapFault(pub String);

impl FromStr for AapFault {
    type Err = UnknownAapFault;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        AapFault::ALL
            .iter()
            .copied()
            .find(|fault| fault.name() == name)
            .ok_or_else(|| UnknownAapFault(name.to_owned()))
    }
}

/// The catalog as printed by `serve --protocol aap --fault list`: name, rule, what it does.
pub fn fault_catalog_lines() -> Vec<String> {
    AapFault::ALL
        .iter()
        .map(|fault| {
            format!(
                "{}\t{}\t{}",
                fault.name(),
                fault.rule(),
                fault.description()
            )
        })
        .collect()
}

/// The faults a server breaks at once (`--fault a,b`), each once, in the order given;
/// empty: the correct server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AapFaultSet(Vec<AapFault>);

impl AapFaultSet {
    pub fn new(faults: impl IntoIterator<Item = AapFault>) -> AapFaultSet {
        let mut set = AapFaultSet::default();
        for fault in faults {
            if !set.0.contains(&fault) {
                set.0.push(fault);
            }
        }
        set
    }

    /// Whether the server breaks `fault`'s rule (sets hold one or two: a linear scan).
    pub fn contains(&self, fault: AapFault) -> bool {
        self.0.contains(&fault)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = AapFault> + '_ {
        self.0.iter().copied()
    }
}

impl From<AapFault> for AapFaultSet {
    fn from(fault: AapFault) -> AapFaultSet {
        AapFaultSet(vec![fault])
    }
}

impl fmt::Display for AapFaultSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|fault| fault.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// `a,b` (spaces around names allowed); an empty or unknown name is an error, so a typo
/// never silently serves the correct server.
impl FromStr for AapFaultSet {
    type Err = UnknownAapFault;

    fn from_str(names: &str) -> Result<Self, Self::Err> {
        let faults = names
            .split(',')
            .map(|name| name.trim().parse::<AapFault>())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AapFaultSet::new(faults))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_round_trip_and_sets_parse() {
        let mut seen = std::collections::HashSet::new();
        for fault in AapFault::ALL {
            assert!(seen.insert(fault.name()), "duplicate {}", fault.name());
            assert_eq!(fault.name().parse::<AapFault>(), Ok(*fault));
            assert!(
                fault.rule().starts_with("AAP-"),
                "{} names no AAP rule",
                fault
            );
        }
        let set: AapFaultSet = "delta-drops-turn-stop, delta-drops-turn-stop"
            .parse()
            .expect("a known fault");
        assert_eq!(set.to_string(), "delta-drops-turn-stop");
        assert!("delta-drops-turn-stop,".parse::<AapFaultSet>().is_err());
        assert!("nope".parse::<AapFaultSet>().is_err());
    }
}
