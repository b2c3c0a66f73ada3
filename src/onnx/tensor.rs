//! TensorProto data: size checks at load time (which read lengths, never the
//! payload) and decoding of small tensors when a shape computation needs them.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;

use super::proto::TensorProto;
use crate::ir::DType;
use crate::ir::SymInt;
use crate::shape::TensorValue;
use crate::shape::fact::MAX_VALUE_ELEMENTS;

/// `TensorProto.DataLocation.EXTERNAL`.
pub(crate) const EXTERNAL: i32 = 1;

/// The element count of `dims`; negative dimensions and overflow are errors.
pub fn element_count(dims: &[i64]) -> Result<u64, String> {
    let mut n: u64 = 1;
    for &d in dims {
        let d = u64::try_from(d).map_err(|_| format!("negative dimension {d}"))?;
        n = n
            .checked_mul(d)
            .ok_or_else(|| format!("element count of {dims:?} overflows 64 bits"))?;
    }
    Ok(n)
}

pub fn dtype_of(t: &TensorProto) -> Result<DType, String> {
    let code = t.data_type.unwrap_or(0);
    DType::from_onnx_code(code).ok_or_else(|| format!("unknown data type {code}"))
}

/// Bytes `n` elements of `t` occupy in `raw_data` (4-bit types pack two).
pub fn raw_len(t: DType, n: u64) -> Option<u64> {
    n.checked_mul(t.bits()).map(|bits| bits.div_ceil(8))
}

fn count_varints(b: &[u8]) -> Result<u64, String> {
    let mut n = 0;
    let mut in_varint = 0;
    for &byte in b {
        in_varint += 1;
        if in_varint > 10 {
            return Err("malformed varint in packed data".into());
        }
        if byte & 0x80 == 0 {
            n += 1;
            in_varint = 0;
        }
    }
    if in_varint != 0 {
        return Err("truncated varint in packed data".into());
    }
    Ok(n)
}

fn decode_varints(b: &[u8]) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    let mut v: u64 = 0;
    let mut shift = 0;
    for &byte in b {
        if shift >= 64 {
            return Err("malformed varint in packed data".into());
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            out.push(v as i64);
            v = 0;
            shift = 0;
        } else {
            shift += 7;
        }
    }
    if shift != 0 {
        return Err("truncated varint in packed data".into());
    }
    Ok(out)
}

/// Where an external tensor's data lives; refuses anything outside `dir`.
pub fn external_location(t: &TensorProto, dir: &Path) -> Result<PathBuf, String> {
    resolve(location_of(t)?, dir)
}

/// The `location` entry of a tensor's external data: the last one, as ONNX
/// reads them (each entry sets its key in turn).
pub fn location_of(t: &TensorProto) -> Result<&str, String> {
    t.external_data
        .iter()
        .rfind(|e| e.key.as_deref() == Some("location"))
        .and_then(|e| e.value.as_deref())
        .ok_or_else(|| "external data without a location".into())
}

/// `location` in `dir`, unless it leads out of `dir`.
fn resolve(location: &str, dir: &Path) -> Result<PathBuf, String> {
    let rel = Path::new(location);
    let escapes = rel.is_absolute()
        || location.starts_with(['/', '\\'])
        || location.as_bytes().get(1) == Some(&b':')
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if escapes || location.contains("..") && location.split(['/', '\\']).any(|p| p == "..") {
        return Err(format!(
            "external data location '{location}' leaves the model's folder"
        ));
    }
    let path = dir.join(rel);
    // A symlink (or a symlinked folder) may still lead out: resolve and compare.
    if let (Ok(real), Ok(base)) = (path.canonicalize(), dir.canonicalize())
        && !real.starts_with(&base)
    {
        return Err(format!(
            "external data location '{location}' resolves outside the model's folder"
        ));
    }
    Ok(path)
}

/// The external data files of a model's folder as its checks find them.
/// A model names one file for thousands of tensors; each location is
/// resolved (every step of its path read as a possible link) and looked
/// at once, not once a tensor.
pub struct ExternalFiles<'d> {
    dir: &'d Path,
    seen: HashMap<String, Result<Found, String>>,
}

/// An external data file's path, and whether it is a regular file and
/// its length, if it is there.
struct Found {
    path: PathBuf,
    meta: Option<(bool, u64)>,
}

impl<'d> ExternalFiles<'d> {
    /// None looked at yet, in `dir`.
    pub fn new(dir: &'d Path) -> Self {
        ExternalFiles {
            dir,
            seen: HashMap::new(),
        }
    }

    /// What was found at `location`, looked at the first time it is asked
    /// for; the same error each time it leads out of the folder.
    fn find(&mut self, location: &str) -> Result<&Found, String> {
        if !self.seen.contains_key(location) {
            let found = resolve(location, self.dir).map(|path| {
                let meta = std::fs::metadata(&path)
                    .ok()
                    .map(|m| (m.is_file(), m.len()));
                Found { path, meta }
            });
            self.seen.insert(location.to_owned(), found);
        }
        self.seen[location].as_ref().map_err(Clone::clone)
    }
}

fn external_field(t: &TensorProto, key: &str) -> Result<Option<u64>, String> {
    // The last entry of a key, as for the location.
    match t
        .external_data
        .iter()
        .rfind(|e| e.key.as_deref() == Some(key))
    {
        None => Ok(None),
        Some(e) => e
            .value
            .as_deref()
            .unwrap_or("")
            .parse()
            .map(Some)
            .map_err(|_| format!("external data {key} is not a number")),
    }
}

/// Checks that a tensor's stored data matches its declared type and shape.
/// Reads lengths only (and the varints of packed integer fields).
pub fn check(t: &TensorProto, dir: &Path) -> Result<(), String> {
    check_in(t, &mut ExternalFiles::new(dir))
}

/// [`check`], with external files looked at through `files`.
pub fn check_in(t: &TensorProto, files: &mut ExternalFiles<'_>) -> Result<(), String> {
    if t.dims.len() > super::MAX_RANK {
        return Err(format!(
            "rank {}, which exceeds the limit of {}",
            t.dims.len(),
            super::MAX_RANK
        ));
    }
    let dtype = dtype_of(t)?;
    let n = element_count(&t.dims)?;
    let expect = raw_len(dtype, n).ok_or("tensor size overflows 64 bits")?;
    if t.data_location == Some(EXTERNAL) {
        let found = files.find(location_of(t)?)?;
        if let Some(len) = external_field(t, "length")?
            && dtype != DType::String
            && len != expect
        {
            return Err(format!(
                "external data holds {len} bytes, but {n} {dtype} elements need {expect}"
            ));
        }
        let offset = external_field(t, "offset")?.unwrap_or(0);
        // A missing file is allowed (weights are often not shipped and
        // rarely needed); one that is there must hold what is declared.
        if let Some((is_file, file_len)) = found.meta {
            let shown = found.path.file_name().unwrap_or_default().to_string_lossy();
            if !is_file {
                return Err(format!("external data '{shown}' is not a regular file"));
            }
            if dtype != DType::String && offset.checked_add(expect).is_none_or(|end| end > file_len)
            {
                return Err(format!(
                    "external data '{shown}' is {file_len} bytes, but {n} {dtype} elements need {expect} at offset {offset}"
                ));
            }
        }
        return Ok(());
    }
    let mismatch = |what: &str, got: u64, want: u64| {
        Err(format!(
            "{what} holds {got} elements but the declared shape {:?} has {want}",
            t.dims
        ))
    };
    if let Some(raw) = &t.raw_data {
        if dtype == DType::String {
            return Err("a string tensor cannot use raw_data".into());
        }
        if raw.len() as u64 != expect {
            return Err(format!(
                "raw_data is {} bytes, but {n} {dtype} elements need {expect}",
                raw.len()
            ));
        }
        return Ok(());
    }
    // Sub-byte types may pack several elements into one int32_data entry.
    let packed = n.div_ceil((8 / dtype.bits().clamp(1, 8)).max(1));
    let fields: [(&str, &Option<Bytes>, u64); 5] = [
        ("float_data", &t.float_data, 4),
        ("double_data", &t.double_data, 8),
        ("int32_data", &t.int32_data, 0),
        ("int64_data", &t.int64_data, 0),
        ("uint64_data", &t.uint64_data, 0),
    ];
    for (what, data, width) in fields {
        let Some(b) = data else { continue };
        // Width 0: varints, one per entry.
        let got = match (b.len() as u64).checked_div(width) {
            Some(g) => g,
            None => count_varints(b)?,
        };
        let ok = got == n || (what == "int32_data" && dtype.bits() < 8 && got == packed);
        return if ok { Ok(()) } else { mismatch(what, got, n) };
    }
    if !t.string_data.is_empty() || dtype == DType::String {
        let got = t.string_data.len() as u64;
        return if got == n {
            Ok(())
        } else {
            mismatch("string_data", got, n)
        };
    }
    if n > 0 {
        return Err(format!("no data for {n} declared elements"));
    }
    Ok(())
}

/// Checks a sparse tensor like a dense one: its dense shape (rank, sizes,
/// element count), its values (a 1-D tensor of NNZ elements) and indices
/// (int64, `[NNZ]` linear or `[NNZ, rank]`), each stored as declared, and,
/// where the indices are small enough to read, every index inside the shape.
pub fn check_sparse(
    sp: &super::proto::SparseTensorProto,
    files: &mut ExternalFiles<'_>,
) -> Result<(), String> {
    if sp.dims.len() > super::MAX_RANK {
        return Err(format!(
            "sparse tensor of rank {}, which exceeds the limit of {} (MAX_RANK)",
            sp.dims.len(),
            super::MAX_RANK
        ));
    }
    let dense = element_count(&sp.dims).map_err(|m| format!("sparse tensor: {m}"))?;
    let values = sp.values.as_ref().ok_or("sparse tensor without values")?;
    check_in(values, files).map_err(|m| format!("sparse tensor values: {m}"))?;
    let [nnz] = values.dims[..] else {
        return Err(format!(
            "sparse tensor values must be 1-D, not of shape {:?}",
            values.dims
        ));
    };
    let nnz = nnz as u64;
    if nnz > dense {
        return Err(format!(
            "sparse tensor holds {nnz} values, more than the {dense} elements of shape {:?}",
            sp.dims
        ));
    }
    let Some(indices) = sp.indices.as_ref() else {
        return if nnz == 0 {
            Ok(())
        } else {
            Err("sparse tensor without indices".into())
        };
    };
    check_in(indices, files).map_err(|m| format!("sparse tensor indices: {m}"))?;
    if dtype_of(indices)? != DType::Int64 {
        return Err("sparse tensor indices must be int64".into());
    }
    let rank = sp.dims.len() as i64;
    let linear = match indices.dims[..] {
        [n] if n as u64 == nnz => true,
        [n, r] if n as u64 == nnz && r == rank => false,
        _ => {
            return Err(format!(
                "sparse tensor indices of shape {:?} do not fit {nnz} values of rank {rank} ([{nnz}] or [{nnz}, {rank}])",
                indices.dims
            ));
        }
    };
    // Indices too many to carry as a value are left unread, like weights.
    let Ok(TensorValue::Ints(ix)) = decode(indices, files.dir) else {
        return Ok(());
    };
    for (k, i) in ix.iter().enumerate() {
        let Some(i) = i.as_int() else { continue };
        let bound = if linear {
            dense
        } else {
            sp.dims[k % sp.dims.len().max(1)] as u64
        };
        if i < 0 || i as u64 >= bound {
            return Err(format!(
                "sparse tensor index {i} is outside the shape {:?}",
                sp.dims
            ));
        }
    }
    Ok(())
}

fn le_chunks<const N: usize>(b: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    b.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

/// Decodes raw little-endian bytes of `dtype` into a value.
fn from_raw(dtype: DType, b: &[u8], n: usize) -> Result<TensorValue, String> {
    // Collected once, as the values' own list (a decoder's thousands of
    // shape constants were each collected twice).
    fn ints(v: impl Iterator<Item = i64>) -> TensorValue {
        TensorValue::ints(v.map(SymInt::Int).collect())
    }
    Ok(match dtype {
        DType::Float32 => TensorValue::floats(
            le_chunks::<4>(b)
                .map(|c| f32::from_le_bytes(c) as f64)
                .collect(),
        ),
        DType::Float64 => TensorValue::floats(le_chunks::<8>(b).map(f64::from_le_bytes).collect()),
        DType::Float16 => TensorValue::floats(
            le_chunks::<2>(b)
                .map(|c| f16_to_f64(u16::from_le_bytes(c)))
                .collect(),
        ),
        DType::Bfloat16 => TensorValue::floats(
            le_chunks::<2>(b)
                .map(|c| f32::from_bits(u32::from(u16::from_le_bytes(c)) << 16) as f64)
                .collect(),
        ),
        DType::Int8 => ints(b.iter().map(|&x| x as i8 as i64)),
        DType::Uint8 | DType::Bool => ints(b.iter().map(|&x| x as i64)),
        DType::Int16 => ints(le_chunks::<2>(b).map(|c| i16::from_le_bytes(c) as i64)),
        DType::Uint16 => ints(le_chunks::<2>(b).map(|c| u16::from_le_bytes(c) as i64)),
        DType::Int32 => ints(le_chunks::<4>(b).map(|c| i32::from_le_bytes(c) as i64)),
        DType::Uint32 => ints(le_chunks::<4>(b).map(|c| u32::from_le_bytes(c) as i64)),
        DType::Int64 => ints(le_chunks::<8>(b).map(i64::from_le_bytes)),
        DType::Uint64 => ints(le_chunks::<8>(b).map(|c| u64::from_le_bytes(c) as i64)),
        DType::Int4 | DType::Uint4 => {
            let signed = dtype == DType::Int4;
            let nib = |x: u8| {
                if signed && x >= 8 {
                    x as i64 - 16
                } else {
                    x as i64
                }
            };
            ints(b.iter().flat_map(|&x| [nib(x & 0xf), nib(x >> 4)]).take(n))
        }
        other => return Err(format!("values of type {other} are not decoded")),
    })
}

/// IEEE half precision to f64.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1f;
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 => {
            if frac == 0.0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        }
        e => (1.0 + frac / 1024.0) * 2f64.powi(i32::from(e) - 15),
    }
}

/// Why a tensor's data gives no value.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// The data cannot be read (an external file missing or too short): the
    /// model is broken where a shape computation needs it.
    Unreadable(String),
    /// The data is not carried as a value (too many elements, a type that
    /// is not decoded, an inconsistent tensor): the value stays unknown.
    NotCarried(String),
}

/// Decodes a tensor's data (embedded or external) into a value. Only tensors
/// of at most [`MAX_VALUE_ELEMENTS`] elements are decoded, so what a tensor
/// declares is never allocated.
pub fn decode(t: &TensorProto, dir: &Path) -> Result<TensorValue, DecodeError> {
    use DecodeError::{NotCarried, Unreadable};
    check(t, dir).map_err(NotCarried)?;
    let dtype = dtype_of(t).map_err(NotCarried)?;
    let n = element_count(&t.dims).map_err(NotCarried)?;
    if n > MAX_VALUE_ELEMENTS as u64 {
        return Err(NotCarried(format!(
            "{n} elements, more than the limit of {MAX_VALUE_ELEMENTS} carried as values"
        )));
    }
    let n = n as usize;
    if t.data_location == Some(EXTERNAL) {
        let path = external_location(t, dir).map_err(NotCarried)?;
        let offset = external_field(t, "offset")
            .map_err(NotCarried)?
            .unwrap_or(0);
        let len = raw_len(dtype, n as u64).ok_or(NotCarried("tensor size overflows".into()))?;
        // Opening a pipe or a device could block or never end.
        let meta = std::fs::metadata(&path)
            .map_err(|e| Unreadable(format!("external data '{}': {e}", path.display())))?;
        if !meta.is_file() {
            return Err(Unreadable(format!(
                "external data '{}' is not a regular file",
                path.display()
            )));
        }
        let mut f = std::fs::File::open(&path)
            .map_err(|e| Unreadable(format!("external data '{}': {e}", path.display())))?;
        use std::io::{Read, Seek, SeekFrom};
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| Unreadable(format!("external data '{}': {e}", path.display())))?;
        let mut buf = vec![0u8; len as usize];
        f.read_exact(&mut buf).map_err(|e| {
            Unreadable(format!(
                "external data '{}': cannot read {len} bytes at offset {offset}: {e}",
                path.display()
            ))
        })?;
        return from_raw(dtype, &buf, n).map_err(NotCarried);
    }
    decode_embedded(t, dtype, n).map_err(NotCarried)
}

/// Decodes data stored in the model file itself.
fn decode_embedded(t: &TensorProto, dtype: DType, n: usize) -> Result<TensorValue, String> {
    if let Some(raw) = &t.raw_data {
        return from_raw(dtype, raw, n);
    }
    let ints = |v: Vec<i64>| TensorValue::ints(v.into_iter().map(SymInt::Int).collect());
    if let Some(b) = &t.float_data {
        return Ok(TensorValue::floats(
            le_chunks::<4>(b)
                .map(|c| f32::from_le_bytes(c) as f64)
                .collect(),
        ));
    }
    if let Some(b) = &t.double_data {
        return Ok(TensorValue::floats(
            le_chunks::<8>(b).map(f64::from_le_bytes).collect(),
        ));
    }
    if let Some(b) = &t.int64_data {
        return Ok(ints(decode_varints(b)?));
    }
    if let Some(b) = &t.uint64_data {
        return Ok(ints(decode_varints(b)?));
    }
    if let Some(b) = &t.int32_data {
        let v = decode_varints(b)?;
        return Ok(match dtype {
            // int32_data holds these as their bit patterns.
            DType::Float16 => {
                TensorValue::floats(v.iter().map(|&x| f16_to_f64(x as u16)).collect())
            }
            DType::Bfloat16 => TensorValue::floats(
                v.iter()
                    .map(|&x| f32::from_bits((x as u32 & 0xffff) << 16) as f64)
                    .collect(),
            ),
            _ => ints(v.into_iter().map(|x| x as i32 as i64).collect()),
        });
    }
    if !t.string_data.is_empty() {
        return Ok(TensorValue::strings(
            t.string_data
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
        ));
    }
    Ok(match dtype {
        DType::Float32 | DType::Float64 | DType::Float16 | DType::Bfloat16 => {
            TensorValue::floats(Vec::new())
        }
        DType::String => TensorValue::strings(Vec::new()),
        _ => TensorValue::ints(Vec::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dtype: DType, dims: &[i64]) -> TensorProto {
        TensorProto {
            dims: dims.to_vec(),
            data_type: Some(dtype.onnx_code()),
            ..Default::default()
        }
    }

    #[test]
    fn sizes_must_match_the_declared_shape() {
        let dir = Path::new(".");
        let mut t = tensor(DType::Float32, &[2, 3]);
        t.raw_data = Some(Bytes::from(vec![0u8; 24]));
        assert!(check(&t, dir).is_ok());
        t.raw_data = Some(Bytes::from(vec![0u8; 20]));
        assert_eq!(
            check(&t, dir).unwrap_err(),
            "raw_data is 20 bytes, but 6 float32 elements need 24"
        );
        let mut t = tensor(DType::Int4, &[3]);
        t.raw_data = Some(Bytes::from(vec![0x21u8, 0x0f]));
        assert!(check(&t, dir).is_ok());
        assert_eq!(
            decode(&t, dir).unwrap(),
            TensorValue::ints(vec![1.into(), 2.into(), (-1).into()])
        );
        let mut t = tensor(DType::Int64, &[3]);
        t.int64_data = Some(Bytes::from(vec![
            1u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 5,
        ]));
        assert_eq!(
            decode(&t, dir).unwrap(),
            TensorValue::ints(vec![1.into(), (-1).into(), 5.into()])
        );
        let t = tensor(DType::Float32, &[-1, 3]);
        assert_eq!(check(&t, dir).unwrap_err(), "negative dimension -1");
        let t = tensor(DType::Float32, &[1 << 32, 1 << 32]);
        assert!(check(&t, dir).unwrap_err().contains("overflows"));
    }

    #[test]
    fn external_locations_stay_inside_the_folder() {
        let dir = Path::new(".");
        let ext = |loc: &str| {
            let mut t = tensor(DType::Float32, &[1]);
            t.data_location = Some(EXTERNAL);
            t.external_data
                .push(super::super::proto::StringStringEntryProto {
                    key: Some("location".into()),
                    value: Some(loc.into()),
                });
            check(&t, dir)
        };
        assert!(ext("weights.bin").is_ok());
        assert!(ext("sub/weights.bin").is_ok());
        assert!(
            ext("../weights.bin")
                .unwrap_err()
                .contains("leaves the model's folder")
        );
        assert!(ext("a/../../w").unwrap_err().contains("leaves"));
        assert!(ext("/etc/passwd").unwrap_err().contains("leaves"));
        assert!(ext("C:\\x").unwrap_err().contains("leaves"));
    }

    /// Tensors naming one external file share one look at it: what it
    /// was when first looked at decides for all of them.
    #[test]
    fn an_external_file_is_looked_at_once_for_all_its_tensors() {
        let dir = std::env::temp_dir().join(format!("c3-external-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("w.bin"), [0u8; 8]).unwrap();
        let at = |offset: u64| {
            let mut t = tensor(DType::Float32, &[1]);
            t.data_location = Some(EXTERNAL);
            for (k, v) in [
                ("location", "w.bin".to_string()),
                ("offset", offset.to_string()),
            ] {
                t.external_data
                    .push(super::super::proto::StringStringEntryProto {
                        key: Some(k.into()),
                        value: Some(v),
                    });
            }
            t
        };
        let mut files = ExternalFiles::new(&dir);
        // 8 bytes hold two float32s, at offsets 0 and 4.
        assert!(check_in(&at(4), &mut files).is_ok());
        assert_eq!(
            check_in(&at(8), &mut files).unwrap_err(),
            "external data 'w.bin' is 8 bytes, but 1 float32 elements need 4 at offset 8"
        );
        // Emptied after the first look: these checks still see 8 bytes,
        // a fresh look sees none.
        std::fs::write(dir.join("w.bin"), []).unwrap();
        assert!(check_in(&at(4), &mut files).is_ok());
        assert_eq!(files.seen.len(), 1);
        assert!(check(&at(4), &dir).unwrap_err().contains("is 0 bytes"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
