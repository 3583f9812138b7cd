//! Reading ELF files: where a function lives (the file offset a uprobe
//! needs) and its first bytes, for probe placement.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

#[derive(Clone, Debug)]
pub struct FunctionSite {
    pub file_offset: u64,
    /// Its virtual address (for printing branch targets).
    pub address: u64,
    /// Its first bytes: up to the symbol's size, and at most MAX_CODE_BYTES.
    pub code: Vec<u8>,
}

/// Enough to decode past any entry prefix worth moving a probe over.
const MAX_CODE_BYTES: u64 = 64;

/// Defined function symbols of an ELF file (both .symtab and .dynsym) with
/// their file offsets, for the names asked for.
pub fn find_functions(path: &Path, names: &[&str]) -> Result<HashMap<String, FunctionSite>> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file = object::File::parse(&*data).with_context(|| format!("parsing ELF {}", path.display()))?;
    let mut out = HashMap::new();
    for symbol in file.symbols().chain(file.dynamic_symbols()) {
        if !symbol.is_definition() || symbol.kind() != SymbolKind::Text {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if !names.contains(&name) || out.contains_key(name) {
            continue;
        }
        let address = symbol.address();
        let segment = file.segments().find(|seg| {
            address >= seg.address() && address < seg.address() + seg.size()
        });
        let Some(segment) = segment else { continue };
        let (segment_offset, _) = segment.file_range();
        let file_offset = address - segment.address() + segment_offset;
        // a symbol without a size (hand-written assembly) is read to the limit
        let length = match symbol.size() {
            0 => MAX_CODE_BYTES,
            size => size.min(MAX_CODE_BYTES),
        };
        let start = file_offset as usize;
        let code = data.get(start..(start + length as usize).min(data.len())).unwrap_or(&[]).to_vec();
        out.insert(name.to_string(), FunctionSite { file_offset, address, code });
    }
    Ok(out)
}

/// Whether an ELF file defines a function of that name.
pub fn defines_function(path: &Path, name: &str) -> bool {
    find_functions(path, &[name]).map(|found| found.contains_key(name)).unwrap_or(false)
}
