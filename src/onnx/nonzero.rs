//! Counting the nonzero elements of a weight, for the formula function
//! `nnz(W)`: only for the tensors a rule asks about, and only when it asks.
//! Embedded data is scanned in place in the memory-mapped model; external
//! data is memory-mapped in its own file (inside the model's folder) and
//! scanned once, front to back, so no weight is ever copied or held.

use std::path::{Path, PathBuf};

use super::proto::TensorProto;
use super::tensor;
use crate::ir::DType;

/// `data_location` of a tensor stored in a side file.
const EXTERNAL: i32 = 1;

/// Where a weight's values are: which field of the tensor holds them, or
/// which bytes of which side file.
pub enum Location<'t> {
    /// Little-endian elements packed at the tensor's own width (`raw_data`,
    /// `float_data`, `double_data`).
    Packed(&'t [u8]),
    /// One varint per element (`int32_data`, `int64_data`, `uint64_data`);
    /// for 4-bit and 2-bit types one varint per byte of packed elements.
    Varints(&'t [u8]),
    /// `length` bytes at `offset` of a file inside the model's folder.
    External {
        path: PathBuf,
        offset: u64,
        length: u64,
    },
}

/// Where `t`'s values are; a side file must stay inside `dir`.
pub fn location<'t>(t: &'t TensorProto, dir: &Path) -> Result<Location<'t>, String> {
    if t.data_location == Some(EXTERNAL) {
        let path = tensor::external_location(t, dir)?;
        let field = |key: &str| -> Result<Option<u64>, String> {
            match t
                .external_data
                .iter()
                .find(|e| e.key.as_deref() == Some(key))
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
        };
        let offset = field("offset")?.unwrap_or(0);
        let length = match field("length")? {
            Some(l) => l,
            None => {
                let meta = std::fs::metadata(&path)
                    .map_err(|e| format!("external data '{}': {e}", path.display()))?;
                meta.len().saturating_sub(offset)
            }
        };
        return Ok(Location::External {
            path,
            offset,
            length,
        });
    }
    let packed = [&t.raw_data, &t.float_data, &t.double_data];
    if let Some(b) = packed.into_iter().flatten().next() {
        return Ok(Location::Packed(b));
    }
    let varints = [&t.int32_data, &t.int64_data, &t.uint64_data];
    if let Some(b) = varints.into_iter().flatten().next() {
        return Ok(Location::Varints(b));
    }
    Ok(Location::Packed(&[]))
}

/// The nonzero elements among the first `n` of `dtype` stored at `loc`.
/// Negative zero is zero; NaN is not.
pub fn count(loc: &Location, dtype: DType, n: u64) -> Result<u64, String> {
    let zero = zero_test(dtype)?;
    match loc {
        Location::Packed(b) => count_packed(b, dtype, n, zero),
        Location::Varints(b) => count_varints(b, dtype, n, zero),
        Location::External {
            path,
            offset,
            length,
        } => {
            let shown = path.display();
            let file =
                std::fs::File::open(path).map_err(|e| format!("external data '{shown}': {e}"))?;
            let meta = file
                .metadata()
                .map_err(|e| format!("external data '{shown}': {e}"))?;
            if !meta.is_file() {
                return Err(format!("external data '{shown}' is not a regular file"));
            }
            let end = offset
                .checked_add(*length)
                .filter(|&e| e <= meta.len())
                .ok_or_else(|| {
                    format!(
                        "external data '{shown}' is {} bytes, too short for {length} bytes at offset {offset}",
                        meta.len()
                    )
                })?;
            if *length == 0 {
                return count_packed(&[], dtype, n, zero);
            }
            // SAFETY: read-only, as the model itself (see `onnx::load`).
            let map = unsafe { memmap2::Mmap::map(&file) }
                .map_err(|e| format!("external data '{shown}': {e}"))?;
            count_packed(&map[*offset as usize..end as usize], dtype, n, zero)
        }
    }
}

/// Whether an element's bit pattern is a zero of `dtype`.
type ZeroTest = fn(u64) -> bool;

fn zero_test(dtype: DType) -> Result<ZeroTest, String> {
    use DType as D;
    Ok(match dtype {
        D::Float32 => |b| b & 0x7fff_ffff == 0,
        D::Float64 => |b| b & 0x7fff_ffff_ffff_ffff == 0,
        D::Float16 | D::Bfloat16 => |b| b & 0x7fff == 0,
        D::Float8E4M3Fn | D::Float8E5M2 => |b| b & 0x7f == 0,
        D::Float4E2M1 => |b| b & 0x7 == 0,
        // 0x80 is NaN in the `fnuz` types, so only 0x00 is zero; E8M0 is a
        // bare exponent and has no zero at all.
        D::Float8E4M3Fnuz | D::Float8E5M2Fnuz => |b| b == 0,
        D::Float8E8M0 => |_| false,
        D::Uint8 | D::Int8 | D::Uint16 | D::Int16 | D::Int32 | D::Int64 | D::Uint32 => |b| b == 0,
        D::Uint64 | D::Bool | D::Uint4 | D::Int4 | D::Uint2 | D::Int2 => |b| b == 0,
        D::String | D::Complex64 | D::Complex128 => {
            return Err(format!(
                "nnz() counts numbers, and cannot count the nonzero elements of a {dtype} tensor"
            ));
        }
    })
}

fn short(have: u64, n: u64, dtype: DType) -> String {
    format!("its data hold {have} elements, but its shape has {n} {dtype} elements")
}

fn count_packed(b: &[u8], dtype: DType, n: u64, zero: ZeroTest) -> Result<u64, String> {
    let bits = dtype.bits();
    let mut nonzero = 0u64;
    if bits < 8 {
        let per_byte = 8 / bits;
        let have = b.len() as u64 * per_byte;
        if have < n {
            return Err(short(have, n, dtype));
        }
        let mask = (1u64 << bits) - 1;
        let mut left = n;
        for &byte in b {
            for k in 0..per_byte.min(left) {
                nonzero += !zero((byte as u64 >> (k * bits)) & mask) as u64;
            }
            left = left.saturating_sub(per_byte);
            if left == 0 {
                break;
            }
        }
        return Ok(nonzero);
    }
    let width = (bits / 8) as usize;
    let have = (b.len() / width) as u64;
    if have < n {
        return Err(short(have, n, dtype));
    }
    let b = &b[..n as usize * width];
    // One loop per width, so the compiler sees fixed-size reads.
    nonzero += match width {
        1 => b.iter().filter(|&&x| !zero(x as u64)).count(),
        2 => b
            .chunks_exact(2)
            .filter(|c| !zero(u16::from_le_bytes([c[0], c[1]]) as u64))
            .count(),
        4 => b
            .chunks_exact(4)
            .filter(|c| !zero(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64))
            .count(),
        _ => b
            .chunks_exact(8)
            .filter(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                !zero(u64::from_le_bytes(w))
            })
            .count(),
    } as u64;
    Ok(nonzero)
}

fn count_varints(b: &[u8], dtype: DType, n: u64, zero: ZeroTest) -> Result<u64, String> {
    let bits = dtype.bits();
    // Sub-byte types keep one byte of packed elements per varint.
    let per_value = if bits < 8 { 8 / bits } else { 1 };
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits.max(1)) - 1
    };
    let (mut nonzero, mut seen, mut value, mut shift) = (0u64, 0u64, 0u64, 0u32);
    for &byte in b {
        if shift >= 64 {
            return Err("a varint in its data is longer than 10 bytes".into());
        }
        value |= ((byte & 0x7f) as u64) << shift;
        shift += 7;
        if byte & 0x80 != 0 {
            continue;
        }
        for k in 0..per_value {
            if seen < n {
                let element = if bits < 8 {
                    (value >> (k * bits)) & mask
                } else {
                    value & mask
                };
                nonzero += !zero(element) as u64;
                seen += 1;
            }
        }
        (value, shift) = (0, 0);
    }
    if seen < n {
        return Err(short(seen, n, dtype));
    }
    Ok(nonzero)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn floats_count_negative_zero_as_zero_and_nan_as_nonzero() {
        let b = f32s(&[0.0, -0.0, 1.5, f32::NAN, 0.0, -2.0]);
        // 1.5, NaN and -2.0
        assert_eq!(count(&Location::Packed(&b), DType::Float32, 6), Ok(3));
        // Only the first four elements: 1.5 and NaN.
        assert_eq!(count(&Location::Packed(&b), DType::Float32, 4), Ok(2));
    }

    #[test]
    fn half_precision_and_small_integers() {
        // float16: 0x0000, 0x8000 (-0), 0x3c00 (1.0)
        let b = [0x00, 0x00, 0x00, 0x80, 0x00, 0x3c];
        assert_eq!(count(&Location::Packed(&b), DType::Float16, 3), Ok(1));
        // int4, low nibble first: 0x10 holds 0 then 1; 0x00 holds 0, 0.
        let b = [0x10, 0x00, 0xf3];
        assert_eq!(count(&Location::Packed(&b), DType::Int4, 6), Ok(3));
        assert_eq!(count(&Location::Packed(&b), DType::Int4, 5), Ok(2));
    }

    #[test]
    fn varint_fields() {
        // int32_data [0, 300, 0, -1]: 300 = ac 02; -1 is ten bytes.
        let mut b = vec![0x00, 0xac, 0x02, 0x00];
        b.extend([0xff; 9]);
        b.push(0x01);
        assert_eq!(count(&Location::Varints(&b), DType::Int32, 4), Ok(2));
        assert!(count(&Location::Varints(&b), DType::Int32, 5).is_err());
    }

    #[test]
    fn short_data_and_strings_are_errors() {
        let b = f32s(&[1.0, 2.0]);
        let e = count(&Location::Packed(&b), DType::Float32, 3).unwrap_err();
        assert_eq!(
            e,
            "its data hold 2 elements, but its shape has 3 float32 elements"
        );
        let e = count(&Location::Packed(&b), DType::String, 1).unwrap_err();
        assert!(
            e.contains("cannot count the nonzero elements of a string tensor"),
            "{e}"
        );
    }
}
