"""Kernel BTF, changed to look the way other kernel versions had it.

The recorder and the monitor judge a kernel by its BTF (and relocate their
programs against it), and LAUNCHGAP_VMLINUX_BTF names the BTF they read in
place of /sys/kernel/btf/vmlinux. These helpers take this machine's own BTF
and undo, in it, what newer kernels added or moved: an enum value a helper or
map type brought, a member a commit renamed or moved, a tracepoint argument
a commit appended. What is left is this kernel's layout (so the programs
still load and run here) as an older kernel would have described it.

The format is the kernel's (Documentation/bpf/btf.rst): a header, the type
section (each type a 12-byte btf_type and its kind's trailing records), and
the string section. Types are referred to by position, so records can be
dropped or added inside a type without renumbering anything.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0xEB9F
HEADER = struct.Struct("<HBBIIIII")  # magic, version, flags, hdr_len, type_off, type_len, str_off, str_len

INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF = 1, 2, 3, 4, 5, 6, 7, 8
FUNC_PROTO, VAR, DATASEC, DECL_TAG, ENUM64 = 13, 14, 15, 17, 19
# bytes after the btf_type: a fixed tail, and one record of this size per vlen
TAIL = {INT: 4, ARRAY: 12, VAR: 4, DECL_TAG: 4}
RECORD = {STRUCT: 12, UNION: 12, ENUM: 8, FUNC_PROTO: 8, DATASEC: 12, ENUM64: 12}


@dataclass
class Type:
    name_off: int
    kind: int
    kind_flag: bool
    size_or_type: int
    tail: bytes
    records: list[bytes]

    def encode(self) -> bytes:
        info = (self.kind << 24) | (int(self.kind_flag) << 31) | len(self.records)
        return struct.pack("<III", self.name_off, info, self.size_or_type) + self.tail + b"".join(self.records)


class Btf:
    def __init__(self, raw: bytes):
        magic, version, flags, hdr_len, type_off, type_len, str_off, str_len = HEADER.unpack_from(raw)
        if magic != MAGIC:
            raise ValueError("not raw BTF")
        self.version, self.flags = version, flags
        self.extra_header = raw[HEADER.size : hdr_len]
        body = raw[hdr_len:]
        self.strings = bytearray(body[str_off : str_off + str_len])
        types = body[type_off : type_off + type_len]
        self.types: list[Type] = []  # type id N is self.types[N - 1]
        at = 0
        while at < len(types):
            name_off, info, size_or_type = struct.unpack_from("<III", types, at)
            kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
            at += 12
            tail = types[at : at + TAIL.get(kind, 0)]
            at += len(tail)
            width = RECORD.get(kind, 0)
            records = [types[at + i * width : at + (i + 1) * width] for i in range(vlen if width else 0)]
            at += width * len(records)
            self.types.append(Type(name_off, kind, bool(info >> 31), size_or_type, tail, records))

    @classmethod
    def read(cls, path: Path) -> Btf:
        return cls(path.read_bytes())

    def write(self, path: Path) -> None:
        types = b"".join(t.encode() for t in self.types)
        hdr_len = HEADER.size + len(self.extra_header)
        header = HEADER.pack(MAGIC, self.version, self.flags, hdr_len, 0, len(types), len(types), len(self.strings))
        path.write_bytes(header + self.extra_header + types + bytes(self.strings))

    def text(self, offset: int) -> str:
        return self.strings[offset : self.strings.index(b"\0", offset)].decode()

    def string(self, text: str) -> int:
        """The offset of TEXT in the string section, added at its end if new."""
        self.strings += text.encode() + b"\0"
        return len(self.strings) - len(text) - 1

    def named(self, kind: int, name: str) -> Type:
        found = [t for t in self.types if t.kind == kind and self.text(t.name_off) == name]
        assert len(found) == 1, f"{len(found)} types of kind {kind} named {name}"
        return found[0]

    def type(self, type_id: int) -> Type:
        return self.types[type_id - 1]

    def _record_named(self, owner: Type, name: str) -> int:
        index = [i for i, r in enumerate(owner.records) if self.text(struct.unpack_from("<I", r)[0]) == name]
        assert len(index) == 1, f"no single {name} in {self.text(owner.name_off)}"
        return index[0]

    # what a newer kernel added or moved, undone

    def drop_enum_value(self, enum: str, value: str) -> None:
        owner = self.named(ENUM, enum)
        del owner.records[self._record_named(owner, value)]

    def rename_type(self, kind: int, old: str, new: str) -> None:
        self.named(kind, old).name_off = self.string(new)

    def drop_member(self, struct_name: str, member: str) -> bytes:
        owner = self.named(STRUCT, struct_name)
        return owner.records.pop(self._record_named(owner, member))

    def rename_member(self, struct_name: str, old: str, new: str) -> None:
        owner = self.named(STRUCT, struct_name)
        i = self._record_named(owner, old)
        owner.records[i] = struct.pack("<I", self.string(new)) + owner.records[i][4:]

    def member_bit_offset(self, struct_name: str, member: str) -> int:
        owner = self.named(STRUCT, struct_name)
        raw = struct.unpack_from("<I", owner.records[self._record_named(owner, member)], 8)[0]
        return raw & 0xFFFFFF if owner.kind_flag else raw

    def move_member(self, from_struct: str, member: str, to_struct: str, bit_offset: int) -> None:
        """MEMBER leaves FROM_STRUCT for TO_STRUCT, at BIT_OFFSET there (the same bytes of memory)."""
        record = self.drop_member(from_struct, member)
        _, type_id, _ = struct.unpack("<III", record)
        self.named(STRUCT, to_struct).records.append(struct.pack("<III", self.string(member), type_id, bit_offset))

    def drop_last_tracepoint_arg(self, tracepoint: str) -> None:
        pointer = self.type(self.named(TYPEDEF, f"btf_trace_{tracepoint}").size_or_type)
        proto = self.type(pointer.size_or_type)
        assert proto.kind == FUNC_PROTO
        proto.records.pop()

    def tracepoint_arity(self, tracepoint: str) -> int:
        """Its arguments, less the leading void *."""
        pointer = self.type(self.named(TYPEDEF, f"btf_trace_{tracepoint}").size_or_type)
        return len(self.type(pointer.size_or_type).records) - 1
