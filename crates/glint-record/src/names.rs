//! The manifest's names for the lidar settings' enums, both ways, so a sidecar reads like the
//! `[[lidar]]` table that produced it.

use glint_lidar::{NonRepetitive, ScanPattern, SecondaryCapture, SecondaryScope, SelfIgnore};

/// The manifest's `pattern` name.
pub(crate) fn pattern_name(p: ScanPattern) -> String {
    match p {
        ScanPattern::Spinning => "spinning".into(),
        ScanPattern::NonRepetitive(NonRepetitive::Mid360) => "livox-mid360".into(),
        ScanPattern::NonRepetitive(NonRepetitive::UnitreeL1) => "unitree-l1".into(),
        ScanPattern::NonRepetitive(NonRepetitive::Risley { .. }) => "risley".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The pattern called `name`, with the Risley rates when it is one.
pub(crate) fn pattern_from(name: &str, risley: Option<(f64, [f64; 2])>) -> Option<ScanPattern> {
    Some(match name {
        "spinning" => ScanPattern::Spinning,
        "livox-mid360" => ScanPattern::NonRepetitive(NonRepetitive::Mid360),
        "unitree-l1" => ScanPattern::NonRepetitive(NonRepetitive::UnitreeL1),
        "risley" => match risley {
            Some((spin_hz, prism_hz)) => ScanPattern::NonRepetitive(NonRepetitive::Risley { spin_hz, prism_hz }),
            None => ScanPattern::NonRepetitive(NonRepetitive::RISLEY_DEFAULT),
        },
        _ => return None,
    })
}

/// The manifest's `self_ignore` name.
pub(crate) fn self_ignore_name(s: SelfIgnore) -> &'static str {
    match s {
        SelfIgnore::None => "none",
        SelfIgnore::MountBody => "mount-body",
        SelfIgnore::WholeRobot => "whole-robot",
        _ => "unknown",
    }
}

/// The self-ignore mode called `name`.
pub(crate) fn self_ignore_from(name: &str) -> Option<SelfIgnore> {
    Some(match name {
        "none" => SelfIgnore::None,
        "mount-body" => SelfIgnore::MountBody,
        "whole-robot" => SelfIgnore::WholeRobot,
        _ => return None,
    })
}

/// The manifest's `secondary_capture` name.
pub(crate) fn capture_name(c: SecondaryCapture) -> &'static str {
    match c {
        SecondaryCapture::Off => "off",
        SecondaryCapture::PassThrough => "pass-through",
        SecondaryCapture::Reflected => "reflected",
        SecondaryCapture::Both => "both",
        _ => "unknown",
    }
}

/// The capture mode called `name`.
pub(crate) fn capture_from(name: &str) -> Option<SecondaryCapture> {
    Some(match name {
        "off" => SecondaryCapture::Off,
        "pass-through" => SecondaryCapture::PassThrough,
        "reflected" => SecondaryCapture::Reflected,
        "both" => SecondaryCapture::Both,
        _ => return None,
    })
}

/// The manifest's `secondary_scope` name.
pub(crate) fn scope_name(s: SecondaryScope) -> &'static str {
    match s {
        SecondaryScope::FlaggedMaterials => "flagged-materials",
        SecondaryScope::AllSurfaces => "all-surfaces",
        _ => "unknown",
    }
}
