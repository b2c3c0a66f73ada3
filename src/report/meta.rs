//! The `meta` object every JSON output starts with: which c3 made it, from
//! which model, and every option in force, so a script can tell two outputs
//! apart without the command line that made them.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

/// What made an output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta {
    /// The model's path as given; `None` for listings (devices, rules).
    pub model: Option<String>,
    /// `onnx` or `trace`; `None` for listings.
    pub input: Option<&'static str>,
    /// Every option in force, by name (`fma`, `device`, `packs`, ...).
    pub options: Map<String, Value>,
}

impl Meta {
    /// A listing's meta (devices, rules): only the rule packs matter.
    pub fn listing(packs: &[String]) -> Meta {
        let mut options = Map::new();
        options.insert("packs".into(), Value::from(packs.to_vec()));
        Meta {
            model: None,
            input: None,
            options,
        }
    }

    /// Sets an option.
    pub fn set(&mut self, name: &str, value: impl Into<Value>) {
        self.options.insert(name.to_string(), value.into());
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("c3_version", env!("CARGO_PKG_VERSION"))?;
        m.serialize_entry("model", &self.model)?;
        m.serialize_entry("input", &self.input)?;
        m.serialize_entry("options", &self.options)?;
        m.end()
    }
}

/// `{"meta": META, KEY: BODY}`: a listing whose body is an array.
pub fn wrap<T: Serialize>(meta: &Meta, key: &str, body: &T) -> String {
    wrap_sized(meta, key, body, 4096)
}

/// [`wrap`] into a buffer of `capacity` bytes to start with.
pub(crate) fn wrap_sized<T: Serialize>(
    meta: &Meta,
    key: &str,
    body: &T,
    capacity: usize,
) -> String {
    struct Doc<'a, T> {
        meta: &'a Meta,
        key: &'a str,
        body: &'a T,
    }
    impl<T: Serialize> Serialize for Doc<'_, T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(2))?;
            m.serialize_entry("meta", self.meta)?;
            m.serialize_entry(self.key, self.body)?;
            m.end()
        }
    }
    super::pretty::to_string(&Doc { meta, key, body }, capacity)
}

impl Meta {
    /// A listing rendered as JSON text (an array) as `{"meta", KEY}`; text
    /// that is not JSON (a table) is returned as it is.
    pub fn wrap_text(&self, key: &str, text: String) -> String {
        match serde_json::from_str::<Value>(&text) {
            Ok(body) => wrap(self, key, &body),
            Err(_) => text,
        }
    }
}
