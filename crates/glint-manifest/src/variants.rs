//! `[variants]`: per-world assets. Each variant swaps assets on named geoms, bodies or
//! materials of the scene (which holds every asset); world `w` takes the variant
//! `assign[w % len(assign)]`.
//!
//! ```toml
//! [variants]
//! assign = ["as_built", "swapped"]
//!
//! [[variants.variant]]
//! name = "as_built"
//!
//! [[variants.variant]]
//! name = "swapped"
//! edits = [
//!   { geom = "sphere_a", mesh = "rock" },
//!   { body = "crate", material = "wood" },
//!   { material = "wood", texture = "oak" },
//!   { geom = "spare_slot", enabled = false },
//! ]
//! ```
//!
//! In an edit with `geom` or `body`, that is the target and `material` is the material it
//! takes; an edit without either targets the material `material` (for its `texture`).

use std::path::Path;

use glint_core::{AssetEdit, EditTarget, Variant};
use serde::Deserialize;

use crate::ManifestError;

/// The `[variants]` table as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVariants {
    #[serde(default)]
    assign: Vec<NameOrIndex>,
    #[serde(default)]
    variant: Vec<RawVariant>,
}

/// A variant by name or by index (from 0).
enum NameOrIndex {
    Index(usize),
    Name(String),
}

/// Read by one visitor, not `#[serde(untagged)]`: an untagged enum's error says only that
/// nothing matched, where this one names the value's type or range.
impl<'de> Deserialize<'de> for NameOrIndex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NameOrIndexVisitor)
    }
}

struct NameOrIndexVisitor;

impl serde::de::Visitor<'_> for NameOrIndexVisitor {
    type Value = NameOrIndex;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a variant's name or its index (0 or more)")
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NameOrIndex, E> {
        usize::try_from(v)
            .map(NameOrIndex::Index)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NameOrIndex, E> {
        usize::try_from(v)
            .map(NameOrIndex::Index)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NameOrIndex, E> {
        Ok(NameOrIndex::Name(v.to_string()))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    #[serde(default)]
    edits: Vec<RawEdit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEdit {
    geom: Option<String>,
    body: Option<String>,
    material: Option<String>,
    mesh: Option<String>,
    hfield: Option<String>,
    texture: Option<String>,
    enabled: Option<bool>,
}

/// The variants and the variant index of each world in turn (both empty without a table).
pub(crate) fn variants(raw: &RawVariants, path: &Path) -> Result<(Vec<Variant>, Vec<usize>), ManifestError> {
    let bad =
        |message: String| ManifestError::Value { path: path.to_path_buf(), message: format!("[variants] {message}") };
    if raw.variant.is_empty() && raw.assign.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    if raw.variant.is_empty() {
        return Err(bad("assign names variants, and there is no [[variants.variant]] table".into()));
    }
    if raw.assign.is_empty() {
        return Err(bad(
            "give assign = [...]: a variant (name or index) per world, repeated over the worlds (world w takes assign[w % len])"
                .into(),
        ));
    }
    let mut list: Vec<Variant> = Vec::new();
    for v in &raw.variant {
        if list.iter().any(|u| u.name == v.name) {
            return Err(bad(format!("two variants are called `{}`: give each its own name", v.name)));
        }
        let edits = v
            .edits
            .iter()
            .enumerate()
            .map(|(k, e)| edit(e).map_err(|m| bad(format!("variant `{}`, edit {k}: {m}", v.name))))
            .collect::<Result<_, _>>()?;
        list.push(Variant { name: v.name.clone(), edits });
    }
    let names: Vec<&str> = list.iter().map(|v| v.name.as_str()).collect();
    let assign = raw
        .assign
        .iter()
        .map(|a| match a {
            NameOrIndex::Index(k) if *k < list.len() => Ok(*k),
            NameOrIndex::Index(k) => {
                Err(bad(format!("assign names variant {k}, and there are {} (from 0)", list.len())))
            }
            NameOrIndex::Name(n) => names.iter().position(|v| v == n).ok_or_else(|| {
                let hint = glint_core::nearest_name(n, names.iter().copied()).map_or_else(
                    || format!("the variants are {}", names.join(", ")),
                    |v| format!("did you mean `{v}`?"),
                );
                bad(format!("assign names `{n}`, which is not a variant; {hint}"))
            }),
        })
        .collect::<Result<Vec<usize>, _>>()?;
    Ok((list, assign))
}

/// One edit: its target (`geom`, `body`, or else `material`) and what it swaps.
fn edit(e: &RawEdit) -> Result<AssetEdit, String> {
    let (target, material) = match (&e.geom, &e.body, &e.material) {
        (Some(_), Some(_), _) => return Err("give geom or body, not both".into()),
        (Some(g), None, m) => (EditTarget::Geom(g.clone()), m.clone()),
        (None, Some(b), m) => (EditTarget::Body(b.clone()), m.clone()),
        (None, None, Some(m)) => (EditTarget::Material(m.clone()), None),
        (None, None, None) => {
            return Err(
                "name what it edits: geom = \"...\", body = \"...\", or material = \"...\" with a texture".into()
            );
        }
    };
    let edit = AssetEdit {
        target,
        mesh: e.mesh.clone(),
        hfield: e.hfield.clone(),
        material,
        texture: e.texture.clone(),
        enabled: e.enabled,
    };
    let swaps = edit.mesh.is_some() || edit.hfield.is_some() || edit.material.is_some();
    if !swaps && edit.texture.is_none() && edit.enabled.is_none() {
        return Err("it changes nothing: give mesh, hfield, material, texture or enabled".into());
    }
    Ok(edit)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::Manifest;

    fn parse(body: &str) -> Result<Manifest, String> {
        Manifest::parse(&format!("scene = \"s.xml\"\n{body}"), Path::new("m.toml")).map_err(|e| e.to_string())
    }

    const TWO: &str = r#"
[[variants.variant]]
name = "a"
[[variants.variant]]
name = "b"
edits = [{ geom = "obj", mesh = "mesh_b" }, { material = "wood", texture = "oak" }, { body = "box", enabled = false }]
"#;

    #[test]
    fn variants_parse_with_names_or_indices() {
        let m = parse(&format!("[variants]\nassign = [\"a\", 1, \"b\"]\n{TWO}")).unwrap();
        assert_eq!(m.variant_assign, vec![0, 1, 1]);
        assert_eq!(m.variants[1].edits.len(), 3);
        assert_eq!(m.variants[1].edits[1].target, glint_core::EditTarget::Material("wood".into()));
        assert_eq!(m.variants[1].edits[2].enabled, Some(false));
        assert!(parse("").unwrap().variants.is_empty());
    }

    #[test]
    fn bad_variant_tables_are_named_errors() {
        let e = parse(&format!("[variants]\nassign = [\"a\", \"c\"]\n{TWO}")).unwrap_err();
        assert!(e.contains("`c`") && e.contains("not a variant"), "{e}");
        let e = parse(&format!("[variants]\nassign = [2]\n{TWO}")).unwrap_err();
        assert!(e.contains("variant 2"), "{e}");
        let e = parse(TWO).unwrap_err();
        assert!(e.contains("give assign"), "{e}");
        let e = parse("[variants]\nassign = [0]\n").unwrap_err();
        assert!(e.contains("no [[variants.variant]]"), "{e}");
        let e = parse("[variants]\nassign = [0]\n[[variants.variant]]\nname = \"a\"\nedits = [{ geom = \"x\" }]\n")
            .unwrap_err();
        assert!(e.contains("changes nothing"), "{e}");
        let e = parse("[variants]\nassign = [0]\n[[variants.variant]]\nname = \"a\"\nedits = [{ geom = \"x\", body = \"y\", mesh = \"m\" }]\n").unwrap_err();
        assert!(e.contains("not both"), "{e}");
        let e = parse("[variants]\nassign = [0]\n[[variants.variant]]\nname = \"a\"\nedits = [{ gem = \"x\" }]\n")
            .unwrap_err();
        assert!(e.contains("gem"), "{e}");
    }
}
