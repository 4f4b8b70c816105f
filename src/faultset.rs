//! What the two built-in servers' fault catalogs share: a fault enum made from one table
//! (name, rule, what it does) by [`fault_catalog!`], its `--fault` parsing, and the set of
//! faults a server breaks at once (`--fault a,b`). The AHP host (`host::faults`) and the AAP
//! server (`aaphost::faults`) each hold only their table. Nothing here knows the harness.

use std::fmt;
use std::str::FromStr;

/// A fault of one built-in server's catalog.
pub trait Fault: Copy + Eq + fmt::Debug + 'static {
    /// Every fault, in catalog order.
    const ALL: &'static [Self];
    /// What an unknown name is called in errors ("fault", "AAP fault").
    const KIND: &'static str;
    /// The command that lists the catalog.
    const LIST: &'static str;

    /// The `--fault` name.
    fn name(self) -> &'static str;
    /// The ID of the one rule this fault breaks.
    fn rule(self) -> &'static str;
    /// One sentence on what the faulty server does wrong.
    fn description(self) -> &'static str;
}

/// Makes a fault enum (with [`Fault`], `Display` and `FromStr`) from one table of
/// `Variant => ("name", "RULE-ID", "what it does")`.
macro_rules! fault_catalog {
    (
        $(#[$meta:meta])*
        $enum:ident, kind = $kind:literal, list = $list:literal,
        $( $variant:ident => ($name:literal, $rule:literal, $what:literal), )*
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $enum {
            $( #[doc = $what] $variant, )*
        }

        impl $enum {
            /// Every fault, in catalog order.
            pub const ALL: &'static [$enum] = &[$($enum::$variant,)*];

            /// The `--fault` name.
            pub fn name(self) -> &'static str {
                match self { $($enum::$variant => $name,)* }
            }

            /// The ID of the one rule this fault breaks.
            pub fn rule(self) -> &'static str {
                match self { $($enum::$variant => $rule,)* }
            }

            /// One sentence on what the faulty server does wrong.
            pub fn description(self) -> &'static str {
                match self { $($enum::$variant => $what,)* }
            }
        }

        impl $crate::faultset::Fault for $enum {
            const ALL: &'static [$enum] = $enum::ALL;
            const KIND: &'static str = $kind;
            const LIST: &'static str = $list;

            fn name(self) -> &'static str {
                $enum::name(self)
            }

            fn rule(self) -> &'static str {
                $enum::rule(self)
            }

            fn description(self) -> &'static str {
                $enum::description(self)
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $enum {
            type Err = $crate::faultset::UnknownFault;

            fn from_str(name: &str) -> Result<Self, Self::Err> {
                $crate::faultset::find(name)
            }
        }
    };
}
pub(crate) use fault_catalog;

/// A `--fault` name that is not in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {name:?} (`{list}` lists them)")]
pub struct UnknownFault {
    pub name: String,
    kind: &'static str,
    list: &'static str,
}

impl UnknownFault {
    fn of<F: Fault>(name: &str) -> UnknownFault {
        UnknownFault {
            name: name.to_owned(),
            kind: F::KIND,
            list: F::LIST,
        }
    }
}

/// The fault of catalog `F` named `name`.
pub fn find<F: Fault>(name: &str) -> Result<F, UnknownFault> {
    F::ALL
        .iter()
        .copied()
        .find(|fault| fault.name() == name)
        .ok_or_else(|| UnknownFault::of::<F>(name))
}

/// The catalog as `serve --fault list` prints it: name, rule ID, what it breaks.
pub fn catalog_lines<F: Fault>() -> Vec<String> {
    F::ALL
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

/// The faults a server breaks at once (`--fault a,b`), in the order given, each once;
/// empty: the correct server. Combined faults each still break their one rule, so a run
/// against them fails the union of their rules (plus what one fault's symptom does to the
/// other's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FaultSet<F>(Vec<F>);

impl<F> Default for FaultSet<F> {
    fn default() -> Self {
        FaultSet(Vec::new())
    }
}

impl<F: Fault> FaultSet<F> {
    /// The set of `faults` (repeats dropped).
    pub fn new(faults: impl IntoIterator<Item = F>) -> FaultSet<F> {
        let mut set = FaultSet::default();
        for fault in faults {
            if !set.0.contains(&fault) {
                set.0.push(fault);
            }
        }
        set
    }

    /// Whether the server breaks `fault`'s rule (a linear scan: sets hold one or two).
    pub fn contains(&self, fault: F) -> bool {
        self.0.contains(&fault)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = F> + '_ {
        self.0.iter().copied()
    }

    /// The combined name (`a,b`) for reports and traces; `None` for the correct server.
    pub fn label(&self) -> Option<String> {
        (!self.is_empty()).then(|| self.to_string())
    }
}

impl<F: Fault> From<F> for FaultSet<F> {
    fn from(fault: F) -> FaultSet<F> {
        FaultSet(vec![fault])
    }
}

impl<F: Fault> From<Option<F>> for FaultSet<F> {
    fn from(fault: Option<F>) -> FaultSet<F> {
        FaultSet(fault.into_iter().collect())
    }
}

impl<F: Fault> fmt::Display for FaultSet<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, fault) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            f.write_str(fault.name())?;
        }
        Ok(())
    }
}

/// `a,b` (spaces around names allowed); an empty or unknown name is an error, so a typo
/// never silently runs the correct server.
impl<F: Fault> FromStr for FaultSet<F> {
    type Err = UnknownFault;

    fn from_str(names: &str) -> Result<Self, Self::Err> {
        let faults = names
            .split(',')
            .map(|name| find::<F>(name.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FaultSet::new(faults))
    }
}
