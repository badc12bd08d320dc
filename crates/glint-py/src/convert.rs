//! Python values to and from glint's: dicts of manifest keys as TOML tables, JSON values as
//! Python objects, the return parameters by their keys, seeds.

use glint_lidar::{RETURN_PARAMS, ReturnParams};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::{Class, raise};

/// A dict of manifest keys (strings, numbers, booleans and lists of them) as a TOML table.
pub(crate) fn toml_table(dict: &Bound<'_, PyDict>, what: &str) -> PyResult<toml::Table> {
    let mut table = toml::Table::new();
    for (key, value) in dict.iter() {
        let key: String = key.extract().map_err(|_| PyTypeError::new_err(format!("{what}: keys must be strings")))?;
        let value = toml_value(&value).map_err(|e| PyTypeError::new_err(format!("{what}: {key}: {e}")))?;
        table.insert(key, value);
    }
    Ok(table)
}

fn toml_value(v: &Bound<'_, PyAny>) -> Result<toml::Value, String> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract().map_err(|e: PyErr| e.to_string())?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract().map_err(|e: PyErr| e.to_string())?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract().map_err(|e: PyErr| e.to_string())?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract().map_err(|e: PyErr| e.to_string())?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> =
            v.try_iter().map_err(|e| e.to_string())?.collect::<PyResult<_>>().map_err(|e| e.to_string())?;
        return Ok(toml::Value::Array(items.iter().map(toml_value).collect::<Result<_, _>>()?));
    }
    if let Ok(dict) = v.cast::<PyDict>() {
        let mut table = toml::Table::new();
        for (key, value) in dict.iter() {
            let key: String = key.extract().map_err(|_| "keys must be strings".to_string())?;
            table.insert(key, toml_value(&value)?);
        }
        return Ok(toml::Value::Table(table));
    }
    // numpy scalars and other numbers.
    if let Ok(f) = v.extract::<f64>() {
        return Ok(toml::Value::Float(f));
    }
    Err(format!(
        "{} is not a string, number, boolean, list or dict",
        v.get_type().name().map_or("?".into(), |n| n.to_string())
    ))
}

/// A JSON value as a Python object.
pub(crate) fn from_json<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        serde_json::Value::Null => py.None().into_bound(py),
        serde_json::Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => i.into_pyobject(py)?.into_any(),
            None => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        serde_json::Value::String(s) => PyString::new(py, s).into_any(),
        serde_json::Value::Array(items) => {
            PyList::new(py, items.iter().map(|i| from_json(py, i)).collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        serde_json::Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, from_json(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// A value with a serde form (a bake status, the task) as a Python object: its JSON, read by
/// Python's `json`, so Python sees the keys and values the sidecars and the command line
/// write, in the order the type declares them.
pub(crate) fn from_serde<'py>(py: Python<'py>, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// The seventeen return parameters as a dict by key (`max_returns` an int).
pub(crate) fn params_dict<'py>(py: Python<'py>, p: &ReturnParams) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (param, value) in RETURN_PARAMS.iter().zip(p.to_array()) {
        if param.key == "max_returns" {
            dict.set_item(param.key, p.max_returns)?;
        } else {
            dict.set_item(param.key, value)?;
        }
    }
    Ok(dict)
}

/// `current` with the parameters `dict` names replaced; `require_base` asks for all nine base
/// parameters (the seed's `SetLidarReturnParams`). Unknown keys are errors naming them.
pub(crate) fn params_from(dict: &Bound<'_, PyDict>, current: ReturnParams, require_base: bool) -> PyResult<[f64; 17]> {
    let mut values = current.to_array();
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        let Some(i) = RETURN_PARAMS.iter().position(|p| p.key == key) else {
            let keys: Vec<&str> = RETURN_PARAMS.iter().map(|p| p.key).collect();
            return Err(PyValueError::new_err(format!(
                "'{key}' is not a return parameter: use one of {}",
                keys.join(", ")
            )));
        };
        values[i] = value.extract::<f64>()?;
    }
    if require_base {
        let missing: Vec<&str> =
            RETURN_PARAMS[..9].iter().filter(|p| !dict.contains(p.key).unwrap_or(false)).map(|p| p.key).collect();
        if !missing.is_empty() {
            return Err(PyValueError::new_err(format!(
                "set_return_params writes the nine base parameters, and {} are missing: send them all (read \
                 return_params first), or use set_return_params_ex to change some",
                missing.join(", ")
            )));
        }
    }
    Ok(values)
}

/// A seed argument (`seed=` of every call that takes one): an integer from 0 to 2**64 - 1.
/// Anything else is refused here, for every call alike, naming the value and the range: a
/// `glint.SettingError` for an integer out of range, a `TypeError` for a value that is not an
/// integer.
pub(crate) struct Seed(pub(crate) u64);

impl<'a, 'py> FromPyObject<'a, 'py> for Seed {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Seed> {
        obj.extract::<u64>().map(Seed).map_err(|e| {
            let message = format!(
                "seed = {}: give an integer from 0 to {} (2**64 - 1)",
                obj.repr().map_or_else(|_| "?".to_string(), |r| r.to_string()),
                u64::MAX
            );
            if e.is_instance_of::<PyOverflowError>(obj.py()) {
                raise(Class::SettingError, message)
            } else {
                PyTypeError::new_err(message)
            }
        })
    }
}
