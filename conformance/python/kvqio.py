"""kvqio -- read kvq vector files, write kvq results files (Python 3.9+, stdlib only).

A vendor whose kernel is not a C shared object (PyTorch, Triton, JAX, ...) can be
judged by kvq in *results-file mode*: read the vectors with this module, run the
kernel on every case, write a results file, then

    kvq verify --vectors kivi.vec --results mine.results

This works for every family kvq has: KIVI (``kivi-quant``, spec/kivi.md), CERT
(``cert-keys``, ``cert-values``, ``cert-step``, spec/cert.md), SAGE
(``sage-qk``, ``sage-p``, ``sage-v``, ``sage-ds``, ``sage-pv``, ``sage-attn``,
spec/sage.md), and any family added to kvq later: nothing in this module names
a family or an operation.  Every family, operation and field -- its type,
role, element count, enum names, pattern, comparison -- and the levels, level
sets, statuses and flags come from the *registry description*, the JSON that
``kvq ops --json`` writes (spec/verify.md; the checked-in copy is
conformance/registry.json, installed beside this file).  See README.md.

The formats are those of spec/vectors.md (normative); this module follows its
rules [VEC-FMT-01] .. [VEC-FMT-05], [VEC-RES-01], [VEC-RES-02], [VEC-CERT-01] ..
[VEC-CERT-06] and the KIVI layout of spec/kivi.md [KIVI-L-01] .. [KIVI-L-04],
[LAY-PACK-01].  Every bit pattern goes through ``struct`` ('>f', '>e', '>I'),
never through decimal text.

The registry
------------
``registry()`` is the Registry in use: on first use, the file ``$KVQ_REGISTRY``
names, else ``registry.json`` beside this module, else ``../registry.json`` (the
source tree).  ``load_registry(path=None)`` reads another and uses it from then
on; ``read_registry(path)`` and ``parse_registry(text, path)`` only read one
(pass it as ``registry=`` to ``read_vectors``/``parse_vectors``).  A description
that cannot be used -- malformed, another ``kvq_registry`` version, a rule that
does not parse, a status number or flag bit that disagrees with the frozen
ones [API-STATUS-01] [API-FLAGS-01] -- raises ``RegistryError`` (a
``FormatError``).  ``family_names()`` lists its families.

``Registry``: ``path``, ``kvq_version``, ``levels``, ``level_sets``,
``max_file_elems``, ``id_max``, ``status`` ((value, name) list), ``flags``
((bit, name) list), ``flag_all``, ``policy``, ``families`` (``Family``: ``name``,
``title``, ``spec``, ``level_sets``, ``ops``), ``ops`` (name -> ``Op``),
``family(name)``, ``op(name)``.  ``Op``: ``name``, ``family``, ``summary``,
``levels``, ``variants``, ``variants_since``, ``legacy_variant``, ``entries``,
``rules`` (``valid``, ``meta_half``, ``amb_lo``, ``amb_hi``: ``Rule`` or None),
``fields`` (``Field``: ``key``, ``type``, ``role``, ``names``, ``count`` (a
``Rule``), ``pattern``, ``cmp``, ``optional``, ``finite``), ``outputs`` (the
output fields, in the order kvq writes them), ``field(key, role=None)``.

Rules (counts and op rules) are C-like integer expressions over the case's
scalar fields, parsed once when the registry is read (``Rule(text, idents)``,
``rule.evaluate(env)``): exact int64 arithmetic, ``/`` and ``%`` truncating,
``?: || && == != < <= > >= + - * / % ! -``, ``min max cdiv``, hex floats and
binary32 fields compared exactly, ``"name"`` the index of an enum's value.  An
evaluation error (overflow, a zero divisor) rejects the case as kvq does.

Reading vectors
---------------
``read_vectors(path, check_digest=True, registry=None) -> VectorFile`` and
``parse_vectors(text, path, check_digest=True, registry=None)`` read a
``kvq-vectors 1`` file strictly, as kvq's own reader does: the magic line, the
four header lines (``family``, ``levels``, ``seed``, ``generator``), then
``case`` lines; blank lines and ``#`` comment lines are ignored after line 1; a
``\\r`` before ``\\n`` is ignored.  A wrong magic or version, a family or level
set the registry does not list, a missing or misplaced header line, a key
given twice, an unknown key, a missing key, a bad value, an array of the wrong
length or above the file limit, a status-0 case whose rule ``valid`` fails, a
non-finite value in a ``finite`` input of a status-0 case, a repeated case id
or a file without cases raises ``FormatError`` (a ``ValueError``) whose text
is ``file:line: what``.  (What a family's C code checks beyond its rules is
not in the description, so not checked here.)
The closing line ``end <count> fnv1a64:<16 hex>`` [VEC-FMT-07] is checked: the
count and the 64-bit FNV-1a digest of the case lines must agree, and no
content line may follow it (``check_digest=False`` skips the digest, which
pure Python computes at about 0.35 us a byte).  A file without it is an error when its generator
is kvq 0.2 or later (it was cut short); otherwise (older kvq, other writers) it
is read with a ``KvqFormatWarning`` (also kept in ``VectorFile.warnings``).
A case of an operation that gained variants in a later kvq than the file's
generator is of the operation's legacy variant (a ``cert-step`` of kvq 0.3 is
``sparse`` [CERT-VAR-02]).

``VectorFile``: ``path``, ``family`` (its name: 'kivi', 'cert', 'sage', ...),
``levels``, ``seed`` (int),
``generator``, ``cases`` (list of ``Case`` in file order), ``trailer`` (the
``end`` line, or None), ``warnings``, ``case(id)`` -> Case, ``header_lines()``,
``end_line()``, ``to_text()`` (the whole file re-encoded: header, cases, end
line).  ``fnv1a64(data, h=None)`` is the digest.  ``VectorFile(path, family,
levels, seed, generator, cases)`` also writes a file of chosen cases.

``Case``: ``id``, ``op``, ``level``, ``status``, ``line`` (line number),
``spec`` (its ``Op``), ``values`` (dict key -> decoded value, in wire order),
``case[key]``, ``key in case``, ``case.get(key, default)``, ``to_line()`` (the
line re-encoded from ``values``: kvq's writer order, byte for byte what ``kvq
gen`` writes), ``text(key, value=None)`` (a vector field's wire text),
``output_text(key, value)`` (a subject's value of output ``key`` as its wire
text), ``encode_outputs(dict)`` (all outputs of a status-0 result, in kvq's
order, for ``ResultsWriter.result``), ``env()`` (the rules' identifiers).
Decoded types, by field type: ``u32``, ``status``, ``flags`` -> int; ``enum``
(``level``, ``grouping``, ``meta``, ``ties``, ``variant``, ...) -> str (an
optional field that is absent: its first name, or 0); ``f32`` -> float;
``a_f32`` -> ``array('f')`` (bit-exact, NaN payloads kept); ``a_f16`` -> list of
float (exact: binary16 values are doubles); ``a_meta`` -> list of float when the
op's rule ``meta_half`` holds (KIVI ``meta=f16``), else ``array('f')``; ``a_u8``
-> bytes; ``a_u16``, ``a_u32`` -> list of int; ``a_c32`` -> ``array('f')`` of
re, im pairs; ``amb`` -> list of (index, alt) pairs; ``custom`` (``promote``,
...) -> str, which must match the field's pattern.

Command line
------------
``python3 kvqio.py [--registry R.json] --check FILE.vec...``: exit 0 when every
file reads and re-encodes byte for byte, 2 with ``file:line: what`` otherwise.

Writing results
---------------
``ResultsWriter(path, subject, unavailable=None)`` (also a context manager)
writes ``kvq-results 1`` and ``subject <name>`` to a temporary file in the same
directory; ``close()`` renames it into place (so nobody reads half a file, as
with kvq's writers [VER-RUN-04]); leaving the ``with`` block by an exception, or
``abort()``, removes it.  Methods:

- ``result(case_or_id, status, outputs=(), touched=None)``: ``result id=<id> status=<n>`` then
  the output fields, ``outputs`` an iterable of (key, text) pairs or a dict
  (text already encoded -- ``case.encode_outputs({key: value, ...})`` gives
  them for any operation; an array of no values is the empty text; an int is
  accepted for ``flags``).  The outputs of an operation, in kvq's order, are
  ``case.spec.outputs``.  Outputs are
  allowed only with status 0 [VEC-RES-02].  ``touched=<key>`` (nonzero status
  only) says a failed call wrote that output; the case then FAILs [VEC-RES-03].
- ``skipped(case_or_id, reason)``: ``result id=<id> skipped=<reason>``, which
  kvq counts as SKIP, never PASS [VEC-CERT-06].
- ``comment(text)``: a ``# text`` line.

A path naming a character device or a pipe (``/dev/stdout``) is written in
place, a symbolic link is followed (its target replaced), as kvq does
[VER-OUT-02].

``read_results(path) -> ResultsFile`` (``subject``, ``unavailable``, ``results``:
list of ``Result`` with ``id``, ``status`` (None when skipped), ``skipped``,
``touched``, ``fields`` (dict of text), ``line``) reads a results file back, as
strictly as kvq (its subject name and reasons as UTF-8: they come from subjects).

Encodings (text <-> values)
---------------------------
``decode_f32(text, n=None) -> array('f')``, ``encode_f32(values)``
(8 hex digits each, big-endian digit order: ``3f800000`` is 1.0);
``decode_f32_words``/``encode_f32_words`` (ints);
``decode_f16``/``encode_f16`` (4 digits: ``3c00`` is 1.0; encoding a value that
is not a binary16 number raises ValueError); ``decode_bytes``/``encode_bytes``;
``decode_meta(text, meta, n=None)``/``encode_meta(values, meta)`` (``meta``
'f32' or 'f16'; ``encode_meta`` writes ``invalid`` for a value the format
cannot hold, as [VEC-RES-02] asks); ``decode_amb(text, n=None, lo=0, hi=255)``/
``encode_amb(pairs)`` (``-`` or ``index:alt,...``); ``decode_flags``/
``encode_flags`` (``0x%08x``); ``decode_u32``.

Scalars: ``f32_bits(x)``, ``f32_from_bits(u)``, ``f16_bits(x)``,
``f16_from_bits(u)``, ``rn32(x)`` and ``rn16(x)`` (round a float, int or
Fraction once to nearest even binary32 / binary16; +-inf when it overflows),
``fma32(a, b, c)`` (RN32 of the exact ``a*b + c`` of binary32 operands),
``round_int(q, ties)`` ('even' | 'away', [POL-TIE-01], [POL-TIE-02]).

KIVI layout (what a vendor needs to produce ``kivi-quant`` results)
------------------------------------------------------------------
``KiviShape(bits, group, grouping, meta, tokens, channels)`` and
``kivi_shape(case)``; ``kivi_params_ok``, ``kivi_shape_ok``, ``code_max(bits)``,
``kivi_elems``, ``kivi_groups``, ``kivi_group_bytes``, ``kivi_code_bytes``;
``kivi_group_elements(shape, g)`` (row-major indices of group g's elements in
element order, group order [KIVI-L-03]); ``kivi_group_of(shape, e)`` -> (g, i);
``pack_codes(codes, bits)``/``unpack_codes(data, bits, count=None)`` (LSB first
[LAY-PACK-01]); ``kivi_pack(shape, codes)`` (row-major codes -> the code bytes
in group order [KIVI-L-04]) and ``kivi_unpack(shape, data)``;
``kivi_outputs(shape, flags, codes, scale, zero, deq)`` -> the (key, text) pairs
of a status-0 ``kivi-quant`` result, in kvq's order (``codes`` packed bytes or
row-major ints; ``scale``/``zero`` stored values, encoded per ``shape.meta``;
``deq`` row-major binary32 values).

Constants (frozen numbers; the registry must agree with them, and its
``status``/``flags`` lists name any later ones): ``KVQ_OK`` .. ``KVQ_E_SUBJECT`` (status codes), ``FLAG_ZERO_SCALE``,
``FLAG_CLAMPED``, ``FLAG_SATURATED``, ``FLAG_SUBNORMAL``, ``FLAG_AMBIGUOUS``,
``FLAG_ALL``, ``F32_MAX``, ``F32_MIN_NORMAL``, ``F16_MAX``, ``F16_MIN_NORMAL``.
"""

import errno
import math
import os
import re
import stat
import struct
import sys
import tempfile
import warnings
from array import array
from collections import namedtuple
from fractions import Fraction

__all__ = [
    "FormatError", "KvqFormatWarning", "VectorFile", "fnv1a64", "Case", "read_vectors", "parse_vectors",
    "ResultsWriter", "ResultsFile", "Result", "read_results", "parse_results",
    "REGISTRY_ENV", "RegistryError", "Registry", "Family", "Op", "Field", "Rule", "registry",
    "load_registry", "read_registry", "parse_registry", "default_registry_path", "family_names",
    "decode_f32", "encode_f32", "decode_f32_words", "encode_f32_words",
    "decode_f16", "encode_f16", "decode_bytes", "encode_bytes", "decode_meta",
    "encode_meta", "decode_amb", "encode_amb", "decode_flags", "encode_flags",
    "decode_u32", "f32_bits", "f32_from_bits", "f16_bits", "f16_from_bits",
    "rn32", "rn16", "fma32", "round_int", "KiviShape", "kivi_shape",
    "kivi_params_ok", "kivi_shape_ok", "code_max", "kivi_elems", "kivi_groups",
    "kivi_group_bytes", "kivi_code_bytes", "kivi_group_elements", "kivi_group_of",
    "pack_codes", "unpack_codes", "kivi_pack", "kivi_unpack", "kivi_outputs",
]

VEC_MAGIC = "kvq-vectors"
RES_MAGIC = "kvq-results"
FORMAT_VERSION = 1

# Status codes [API-STATUS-01] (frozen numbers).
KVQ_OK, KVQ_E_NONFINITE, KVQ_E_SHAPE, KVQ_E_PARAM, KVQ_E_RANGE = 0, 1, 2, 3, 4
KVQ_E_NOMEM, KVQ_E_IO, KVQ_E_FORMAT, KVQ_E_NODEVICE, KVQ_E_DEVICE = 5, 6, 7, 8, 9
KVQ_E_SUBJECT = 10
STATUS_COUNT = 11

# The flags word [API-FLAGS-01].
FLAG_ZERO_SCALE = 0x01
FLAG_CLAMPED = 0x02
FLAG_SATURATED = 0x04
FLAG_SUBNORMAL = 0x08
FLAG_AMBIGUOUS = 0x10
FLAG_ALL = 0x1F

F32_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]   # 0x1.fffffep+127
F32_MIN_NORMAL = 2.0 ** -126
F16_MAX = 65504.0
F16_MIN_NORMAL = 2.0 ** -14

FNV_OFFSET = 0xCBF29CE484222325  # FNV-1a 64 [VEC-FMT-07]
FNV_PRIME = 0x100000001B3
MAX_FILE_ELEMS = 1 << 24        # values per array kvq accepts from a file
ID_MAX = 63                     # characters of a case id
_LITTLE = sys.byteorder == "little"
_HEX_RE = re.compile(r"[0-9a-fA-F]*\Z")
_DEC_RE = re.compile(r"[0-9]+\Z")
_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,%d}\Z" % ID_MAX)
_RKEY_RE = re.compile(r"[a-z0-9_]+\Z")
_BLANK_RE = re.compile(r"[ \t]+")


class KvqFormatWarning(UserWarning):
    """A file read, with a caveat (a vector file without an end line)."""


class FormatError(ValueError):
    """A malformed file: str() is 'file:line: what' (line 0: the file as a whole)."""

    def __init__(self, path, line, what):
        self.path, self.line, self.what = path, line, what
        ValueError.__init__(self, "%s:%d: %s" % (path, line, what) if line > 0 else "%s: %s" % (path, what))


# ---- scalars ------------------------------------------------------------------

def f32_from_bits(u):
    """The binary32 value of the 32-bit encoding u, as a float (exact)."""
    return struct.unpack(">f", struct.pack(">I", u & 0xFFFFFFFF))[0]


def f32_bits(x):
    """The 32-bit encoding of x, which must be a binary32 value (exactly).

    A NaN encodes as the platform's conversion gives it (payloads are not
    carried by floats: use array('f') or the *_words functions for those)."""
    try:
        b = struct.pack(">f", x)
    except OverflowError:
        raise ValueError("%r is not a binary32 value (overflows)" % (x,)) from None
    if x == x and struct.unpack(">f", b)[0] != x:
        raise ValueError("%r is not a binary32 value" % (x,))
    return struct.unpack(">I", b)[0]


def f16_from_bits(u):
    """The binary16 value of the 16-bit encoding u, as a float (exact)."""
    return struct.unpack(">e", struct.pack(">H", u & 0xFFFF))[0]


def f16_bits(x):
    """The 16-bit encoding of x, which must be a binary16 value (exactly)."""
    try:
        b = struct.pack(">e", x)
    except (OverflowError, struct.error):
        raise ValueError("%r is not a binary16 value (overflows)" % (x,)) from None
    if x == x and struct.unpack(">e", b)[0] != x:
        raise ValueError("%r is not a binary16 value" % (x,))
    return struct.unpack(">H", b)[0]


def _round_fraction(v, p, emin, limit):
    """Exact v (Fraction, nonzero) rounded to nearest even onto a binary format
    with p significant bits, smallest normal 2^emin, gradual underflow; returns
    +-inf when the rounded magnitude reaches `limit` (2^(emax+1))."""
    neg = v < 0
    a = -v if neg else v
    num, den = a.numerator, a.denominator
    e = num.bit_length() - den.bit_length()          # 2^e <= a < 2^(e+2)
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1                                       # now 2^e <= a < 2^(e+1)
    q = max(e, emin) - (p - 1)                       # exponent of the quantum
    if q >= 0:
        den <<= q
    else:
        num <<= -q
    k, rem = divmod(num, den)
    if 2 * rem > den or (2 * rem == den and (k & 1)):
        k += 1
    r = math.ldexp(float(k), q) if k else 0.0        # k <= 2^p: exact
    if r >= limit:
        r = math.inf
    return -r if neg else r


def rn32(x):
    """x rounded once to nearest even binary32, as a float; +-inf on overflow.

    x: a float (binary64), an int or a Fraction.  For a float this is one
    C conversion (double -> float) through struct, which rounds correctly; for
    int and Fraction the rounding is exact integer arithmetic.  (A zero Fraction
    or int gives +0.)"""
    if isinstance(x, float):
        try:
            return struct.unpack(">f", struct.pack(">f", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    v = Fraction(x)
    if v == 0:
        return 0.0
    return _round_fraction(v, 24, -126, 2.0 ** 128)


def rn16(x):
    """x rounded once to nearest even binary16, as a float; +-inf on overflow
    (exactly when |x| >= 65520 [POL-F16-02]).  x: float, int or Fraction."""
    if isinstance(x, float):
        if x != x or math.isinf(x):
            return x
        try:
            return struct.unpack(">e", struct.pack(">e", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    v = Fraction(x)
    if v == 0:
        return 0.0
    return _round_fraction(v, 11, -14, 65536.0)


def _dbits(h):
    return struct.unpack(">Q", struct.pack(">d", h))[0]


def fma32(a, b, c):
    """RN32(a*b + c) with one rounding (C fmaf) for binary32 operands a, b, c.

    Why this is exact in binary64: a*b of two binary32 values has at most 48
    significant bits, so the binary64 product is exact (and neither overflows
    nor underflows binary64).  The sum p + c is not exact in binary64, and
    rounding it to binary64 then to binary32 can round twice wrongly, so the
    binary64 sum is made *round-to-odd*: TwoSum gives the exact error err of
    h = RN64(p + c); when err != 0 and h's last bit is even, h moves one ulp
    towards err.  Rounding a round-to-odd binary64 value (53 >= 24 + 2 bits)
    to binary32 gives the correctly rounded result (Boldo and Melquiond)."""
    p = a * b
    h = p + c
    if math.isinf(h) or h != h:
        return rn32(h)
    bb = h - p
    err = (p - (h - bb)) + (c - bb)
    if err != 0.0 and not (_dbits(h) & 1):
        h = math.nextafter(h, math.inf if err > 0 else -math.inf)
    return rn32(h)


def _fma32_exact(a, b, c):
    """fma32 by exact rational arithmetic (slow; the tests compare the two)."""
    if any(math.isinf(v) or v != v for v in (a, b, c)):
        return rn32(a * b + c)
    v = Fraction(a) * Fraction(b) + Fraction(c)
    if v == 0:
        return a * b + c     # exact zero: binary64 gives IEEE's sign of the zero sum
    r = _round_fraction(v, 24, -126, 2.0 ** 128)
    return r if r != 0 else math.copysign(0.0, float(v))


def round_int(q, ties="even"):
    """The integer nearest to the finite float q; halfway: the even one
    ('even', [POL-TIE-01]) or the one of larger magnitude ('away',
    [POL-TIE-02]).  The remainder q - floor(q) is exact, so the tie test is."""
    a = abs(q)
    fl = math.floor(a)
    d = a - fl
    up = d > 0.5 or (d == 0.5 and (ties == "away" or fl % 2 == 1))
    k = fl + (1 if up else 0)
    return -k if q < 0 else k


# ---- hex encodings --------------------------------------------------------------

def _check_hex(text, width, n, what):
    if not _HEX_RE.match(text):
        raise ValueError("%s: bad hex digit" % what)
    if len(text) % width:
        raise ValueError("%s: %d hex digits, not a multiple of %d" % (what, len(text), width))
    if n is not None and len(text) != width * n:
        raise ValueError("%s: %d hex digits, expected %d" % (what, len(text), width * n))


def decode_f32(text, n=None, what="binary32 array"):
    """8 hex digits a binary32 value -> array('f') (bit-exact)."""
    _check_hex(text, 8, n, what)
    a = array("f")
    a.frombytes(bytes.fromhex(text))
    if _LITTLE:
        a.byteswap()
    return a


def encode_f32(values):
    """binary32 values (array('f'), or floats that are binary32 values) -> hex."""
    if isinstance(values, array) and values.typecode == "f":
        a = array("f", values)
        if _LITTLE:
            a.byteswap()
        return a.tobytes().hex()
    return "".join("%08x" % f32_bits(v) for v in values)


def decode_f32_words(text, n=None, what="binary32 array"):
    """8 hex digits each -> list of 32-bit encodings (ints)."""
    _check_hex(text, 8, n, what)
    return [int(text[i:i + 8], 16) for i in range(0, len(text), 8)]


def encode_f32_words(words):
    return "".join("%08x" % (w & 0xFFFFFFFF) for w in words)


def decode_f16(text, n=None, what="binary16 array"):
    """4 hex digits a binary16 value -> list of float (exact)."""
    _check_hex(text, 4, n, what)
    k = len(text) // 4
    return list(struct.unpack(">%de" % k, bytes.fromhex(text)))


def encode_f16(values):
    """binary16 values (floats exactly representable in binary16) -> hex."""
    return "".join("%04x" % f16_bits(v) for v in values)


def decode_bytes(text, n=None, what="byte array"):
    """2 hex digits a byte -> bytes."""
    _check_hex(text, 2, n, what)
    return bytes.fromhex(text)


def encode_bytes(data):
    return bytes(data).hex()


def decode_meta(text, meta, n=None, what="metadata"):
    """Metadata in the case's storage format [VEC-FMT-05]: 'f32' -> array('f'),
    'f16' -> list of float."""
    if meta == "f16":
        return decode_f16(text, n, what)
    if meta == "f32":
        return decode_f32(text, n, what)
    raise ValueError("meta must be 'f32' or 'f16', not %r" % (meta,))


def encode_meta(values, meta, invalid=True):
    """Stored metadata -> text: binary32 (meta 'f32') or binary16 ('f16').  A
    value the format cannot hold gives the word 'invalid' [VEC-RES-02] (or a
    ValueError with invalid=False)."""
    try:
        if meta == "f16":
            return encode_f16(values)
        if meta == "f32":
            return encode_f32(values)
    except ValueError:
        if invalid:
            return "invalid"
        raise
    raise ValueError("meta must be 'f32' or 'f16', not %r" % (meta,))


def decode_amb(text, n=None, lo=0, hi=255, what="amb"):
    """'-' or 'index:alt,...' -> list of (index, alt); indices strictly
    increasing and below n, alt in [lo, hi] ('-' sign allowed when lo < 0)."""
    if text == "-":
        return []
    out = []
    prev = -1
    for k, item in enumerate(text.split(",")):
        idx, colon, alt = item.partition(":")
        neg = lo < 0 and alt.startswith("-")
        digits = alt[1:] if neg else alt
        if not colon or not _DEC_RE.match(idx) or not _DEC_RE.match(digits):
            raise ValueError("%s: entry %d is not decimal index:alt" % (what, k))
        i, a = int(idx), int(digits) * (-1 if neg else 1)
        if i >= 1 << 64 or (n is not None and i >= n):
            raise ValueError("%s: index %d out of range" % (what, i))
        if i <= prev:
            raise ValueError("%s: indices not strictly increasing at %d" % (what, i))
        if a > hi or a < lo:
            raise ValueError("%s: alternative code %d outside [%d, %d]" % (what, a, lo, hi))
        out.append((i, a))
        prev = i
    return out


def encode_amb(pairs):
    pairs = list(pairs)
    if not pairs:
        return "-"
    return ",".join("%d:%d" % (i, a) for i, a in pairs)


def decode_u32(text, what="decimal"):
    if not _DEC_RE.match(text) or int(text) > 0xFFFFFFFF:
        raise ValueError("%s: '%.40s' is not a decimal number below 2^32" % (what, text))
    return int(text)


def decode_flags(text, what="flags"):
    """'0x' + 8 hex digits -> int."""
    if len(text) != 10 or text[0] != "0" or text[1] not in "xX" or not _HEX_RE.match(text[2:]):
        raise ValueError("%s: '%.40s' is not 0x followed by 8 hex digits" % (what, text))
    return int(text[2:], 16)


def encode_flags(u):
    return "0x%08x" % (u & 0xFFFFFFFF)


# ---- KIVI layout [KIVI-L-01..04] [LAY-PACK-01] -------------------------------------

KiviShape = namedtuple("KiviShape", "bits group grouping meta tokens channels")
KiviShape.__doc__ = ("A kivi-quant shape: bits n, group G, grouping 'channel' | 'token', "
                     "meta 'f32' | 'f16', tokens T, channels D [KIVI-L-01].")


def kivi_shape(case):
    """The KiviShape of a kivi-quant Case (or of a dict of its values)."""
    v = case.values if isinstance(case, Case) else case
    return KiviShape(v["bits"], v["group"], v["grouping"], v["meta"], v["tokens"], v["channels"])


def code_max(bits):
    return (1 << bits) - 1


def kivi_params_ok(s):
    """bits in {1,2,4,8}, G a multiple of 8 in [8, 4096], grouping and meta
    known [KIVI-L-02]; otherwise KVQ_E_PARAM."""
    return (s.bits in (1, 2, 4, 8) and 8 <= s.group <= 4096 and s.group % 8 == 0
            and s.grouping in ("channel", "token") and s.meta in ("f32", "f16"))


def kivi_shape_ok(s):
    """The extent fits [KIVI-L-02] (parameters checked first); else KVQ_E_SHAPE."""
    if s.tokens == 0 or s.channels == 0 or s.tokens > 1 << 24 or s.channels > 1 << 24:
        return False
    if s.tokens * s.channels > 1 << 36:
        return False
    return (s.tokens if s.grouping == "channel" else s.channels) % s.group == 0


def kivi_elems(s):
    return s.tokens * s.channels


def kivi_groups(s):
    return s.tokens * s.channels // s.group


def kivi_group_bytes(s):
    return s.group * s.bits // 8


def kivi_code_bytes(s):
    return kivi_groups(s) * kivi_group_bytes(s)


def kivi_group_elements(s, g):
    """Row-major indices of group g's G elements, element i first [KIVI-L-03]:
    per channel g = tb*D + c holds x[(tb*G + i)*D + c]; per token g holds
    x[g*G + i]."""
    G, D = s.group, s.channels
    if s.grouping == "channel":
        tb, c = divmod(g, D)
        return range(tb * G * D + c, (tb * G + G) * D + c, D)
    return range(g * G, g * G + G)


def kivi_group_of(s, e):
    """(g, i) of the row-major element e (the inverse of kivi_group_elements)."""
    G, D = s.group, s.channels
    t, c = divmod(e, D)
    if s.grouping == "channel":
        tb, i = divmod(t, G)
        return tb * D + c, i
    return divmod(e, G)


def pack_codes(codes, bits):
    """b-bit codes -> bytes, LSB first: element i in byte i*b//8 at bit
    (i*b) % 8 [LAY-PACK-01].  len(codes)*bits must be a multiple of 8."""
    codes = list(codes)
    if bits not in (1, 2, 4, 8):
        raise ValueError("bits must be 1, 2, 4 or 8")
    if (len(codes) * bits) % 8:
        raise ValueError("%d codes of %d bits do not fill whole bytes" % (len(codes), bits))
    cmax = code_max(bits)
    out = bytearray(len(codes) * bits // 8)
    for i, c in enumerate(codes):
        if not 0 <= c <= cmax:
            raise ValueError("code %r of element %d outside [0, %d]" % (c, i, cmax))
        out[i * bits >> 3] |= c << ((i * bits) & 7)
    return bytes(out)


def unpack_codes(data, bits, count=None):
    """The inverse of pack_codes: the first `count` codes (default: all)."""
    if count is None:
        count = len(data) * 8 // bits
    cmax = code_max(bits)
    return [(data[i * bits >> 3] >> ((i * bits) & 7)) & cmax for i in range(count)]


def kivi_pack(s, codes):
    """Row-major codes (T*D ints) -> the code array: group g's codes packed at
    bytes g*B .. g*B + B - 1, B = G*bits/8 [KIVI-L-04]."""
    if len(codes) != kivi_elems(s):
        raise ValueError("%d codes for %d elements" % (len(codes), kivi_elems(s)))
    out = bytearray()
    for g in range(kivi_groups(s)):
        out += pack_codes([codes[e] for e in kivi_group_elements(s, g)], s.bits)
    return bytes(out)


def kivi_unpack(s, data):
    """The code array -> row-major codes (the inverse of kivi_pack)."""
    if len(data) != kivi_code_bytes(s):
        raise ValueError("%d code bytes, expected %d" % (len(data), kivi_code_bytes(s)))
    out = [0] * kivi_elems(s)
    B = kivi_group_bytes(s)
    for g in range(kivi_groups(s)):
        for e, c in zip(kivi_group_elements(s, g), unpack_codes(data[g * B:(g + 1) * B], s.bits, s.group)):
            out[e] = c
    return out


def kivi_outputs(s, flags, codes, scale, zero, deq):
    """The output fields of a status-0 kivi-quant result, in kvq's order:
    flags, codes, scale, zero, deq [VEC-RES-02].  codes: the packed code array
    (bytes) or T*D row-major ints; scale, zero: the stored metadata (floats,
    encoded in shape.meta's format, 'invalid' where impossible); deq: T*D
    binary32 values, row-major."""
    if not isinstance(codes, (bytes, bytearray)):
        codes = kivi_pack(s, codes)
    return [("flags", encode_flags(flags)), ("codes", encode_bytes(codes)),
            ("scale", encode_meta(scale, s.meta)), ("zero", encode_meta(zero, s.meta)),
            ("deq", encode_f32(deq))]


# ---- the registry: families, operations, fields (conformance/registry.json) ----------
#
# Every family, operation and field this module reads comes from the registry
# description that `kvq ops --json` writes (spec/verify.md; the checked-in copy
# is conformance/registry.json, installed beside this file).  Nothing here
# names a family or an operation: a family added to kvq's registry is read as
# soon as the JSON lists it.

REGISTRY_ENV = "KVQ_REGISTRY"       # the path of another registry description
REGISTRY_FORMAT = 1                 # the "kvq_registry" version this module reads

_FIELD_TYPES = ("id", "op", "status", "flags", "u32", "enum", "f32", "custom", "a_f32", "a_f16",
                "a_meta", "a_u8", "a_u16", "a_u32", "a_c32", "amb")
_ARRAY_TYPES = frozenset(("a_f32", "a_f16", "a_meta", "a_u8", "a_u16", "a_u32", "a_c32", "amb"))
_ROLES = ("case", "input", "expected", "reference", "output")
_CMPS = ("judge", "always", "exact")
_OP_RULES = ("valid", "meta_half", "amb_lo", "amb_hi")
# the frozen numbers [API-STATUS-01] [API-FLAGS-01]: a registry must agree with them
_FROZEN_STATUS = {"KVQ_OK": 0, "KVQ_E_NONFINITE": 1, "KVQ_E_SHAPE": 2, "KVQ_E_PARAM": 3, "KVQ_E_RANGE": 4,
                  "KVQ_E_NOMEM": 5, "KVQ_E_IO": 6, "KVQ_E_FORMAT": 7, "KVQ_E_NODEVICE": 8,
                  "KVQ_E_DEVICE": 9, "KVQ_E_SUBJECT": 10}
_FROZEN_FLAGS = {"ZERO_SCALE": 0, "CLAMPED": 1, "SATURATED": 2, "SUBNORMAL": 3, "AMBIGUOUS": 4}


class RegistryError(FormatError):
    """A registry description that cannot be used: str() is 'file: what'."""

    def __init__(self, path, what):
        FormatError.__init__(self, path, 0, what)


# ---- the rule language ---------------------------------------------------------------
#
# A rule is a C-like integer expression over the scalar fields of a case
# (spec/verify.md): decimal and 0x integers, C99 hex floats, "names" of an enum
# compared with that enum; ?: || && == != < <= > >= + - * / % ! unary -,
# min() max() cdiv(); C precedence.  Integers are exact and must stay within
# int64; / and % truncate toward zero.  A binary32 identifier (and a hex
# float) may only be compared.  Each rule is parsed once, into closures.

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_RULE_TOKEN = re.compile(r"""
    [ \t]*(?:
      (?P<hexfloat>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)
    | (?P<hexint>0[xX][0-9a-fA-F]+)
    | (?P<dec>[0-9]+)
    | (?P<name>"[^"]*")
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<punct>\|\||&&|==|!=|<=|>=|[?:<>+\-*/%!(),])
    )""", re.X)


class _RuleEvalError(Exception):
    """An evaluation error of a rule: 'column N: what' (overflow, a zero divisor)."""


class _RuleSyntaxError(Exception):
    pass


def _rule_fail(pos, what):
    raise _RuleEvalError("column %d: %s" % (pos, what))


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _arith(op, a, b, pos):
    """The closure of a binary integer operator: exact, within int64, / and %
    truncating toward zero."""
    if op in _ARITH:
        f = _ARITH[op]

        def run(e):
            v = f(a(e), b(e))
            if v < _I64_MIN or v > _I64_MAX:
                _rule_fail(pos, "overflow")
            return v
        return run

    def div(e):
        x, y = a(e), b(e)
        if y == 0:
            _rule_fail(pos, "division by zero" if op == "/" else "remainder by zero")
        q = abs(x) // abs(y)
        q = q if (x < 0) == (y < 0) else -q
        if q > _I64_MAX:
            _rule_fail(pos, "overflow")
        return q if op == "/" else x - y * q
    return div


class Rule:
    """One parsed rule: text, refs (the identifiers it names) and
    evaluate(env) -> int.

    idents maps each identifier the rule may use to (kind, names): kind 'int'
    or 'float' (a binary32 field), names an enum's value names (else None)."""

    __slots__ = ("text", "refs", "conjuncts", "_fn", "_toks", "_pos", "_idents", "_chains")

    def __init__(self, text, idents):
        if not isinstance(text, str):
            raise _RuleSyntaxError("a rule is a string")
        self.text = text
        self.refs = set()
        self._idents = idents
        self._toks = self._lex(text)
        self._pos = 0
        self._chains = {}
        fn, kind, _ = self._ternary()
        # the operands of a top-level && chain, for messages: (text, closure)
        self.conjuncts = self._chains.get(id(fn), [])
        if self._toks[self._pos][0] != "end":
            self._fail("unexpected '%s'" % self._toks[self._pos][1])
        if kind == "float":
            self._fail("a rule's value is an integer, not a float", 1)
        if kind == "name":
            self._fail("a quoted name is compared with an enum field only", 1)
        self._fn = fn
        self._toks = self._idents = self._chains = None

    def evaluate(self, env):
        """The rule's value for env (identifier -> number; an absent one is 0).
        Raises _RuleEvalError on an overflow or a zero divisor."""
        return self._fn(env)

    def __repr__(self):
        return "Rule(%r)" % self.text

    # -- lexing and parsing (C precedence; ?: right-associative)
    @staticmethod
    def _lex(text):
        toks, i = [], 0
        while True:
            m = _RULE_TOKEN.match(text, i)
            if m is None or m.lastgroup is None:
                rest = text[i:].lstrip(" \t")
                if rest:
                    raise _RuleSyntaxError("column %d: unexpected '%s'" % (len(text) - len(rest) + 1, rest[:10]))
                toks.append(("end", "", len(text) + 1))
                return toks
            kind = m.lastgroup
            val, pos = m.group(kind), m.start(kind) + 1
            nxt = text[m.end():m.end() + 1]
            if kind in ("hexint", "dec", "hexfloat") and (nxt.isalnum() or nxt in ("_", ".")):
                raise _RuleSyntaxError("column %d: malformed number (no suffixes, no decimal fractions)" % pos)
            if kind == "name" and len(val) == 2:
                raise _RuleSyntaxError("column %d: bad quoted name" % pos)
            toks.append((kind, val, pos))
            i = m.end()

    def _fail(self, what, pos=None):
        if pos is None:
            pos = self._toks[min(self._pos, len(self._toks) - 1)][2]
        raise _RuleSyntaxError("column %d: %s" % (pos, what))

    def _peek(self):
        kind, val, _ = self._toks[self._pos]
        return val if kind == "punct" else None

    def _at(self):
        return self._toks[self._pos][2]

    def _expect(self, p, what):
        if self._peek() != p:
            self._fail(what)
        self._pos += 1

    def _int(self, node, pos, what):
        fn, kind, _ = node
        if kind == "float":
            self._fail("a float is only compared, never %s" % what, pos)
        if kind == "name":
            self._fail("a quoted name is compared with an enum field only", pos)
        return fn

    def _ternary(self):
        cond = self._or()
        if self._peek() != "?":
            return cond
        pos = self._at()
        self._pos += 1
        a = self._ternary()
        self._expect(":", "expected ':' of '?:'")
        b = self._ternary()
        c, fa, fb = (self._int(n, pos, "an operand of '?:'") for n in (cond, a, b))
        return (lambda e: fa(e) if c(e) else fb(e)), "int", None

    def _span(self, k0, k1):
        """The rule's text of tokens k0 .. k1-1, without parentheses around
        the whole of it."""
        while k1 - k0 >= 2 and self._toks[k0][1] == "(" and self._toks[k1 - 1][1] == ")":
            depth = 0
            for k in range(k0, k1):
                if self._toks[k][0] == "punct" and self._toks[k][1] in "()":
                    depth += 1 if self._toks[k][1] == "(" else -1
                    if depth == 0 and k < k1 - 1:
                        break
            else:
                k0, k1 = k0 + 1, k1 - 1
                continue
            break
        kind, val, pos = self._toks[k1 - 1]
        return self.text[self._toks[k0][2] - 1:pos - 1 + len(val)]

    def _logic(self, sub, op):
        k0 = self._pos
        left = sub()
        chain = [(self._span(k0, self._pos), left[0])]
        while self._peek() == op:
            pos = self._at()
            self._pos += 1
            k0 = self._pos
            right = sub()
            chain.append((self._span(k0, self._pos), right[0]))
            a = self._int(left, pos, "in arithmetic or logic")
            b = self._int(right, pos, "in arithmetic or logic")
            if op == "&&":
                left = ((lambda a, b: lambda e: 1 if a(e) and b(e) else 0)(a, b), "int", None)
                self._chains[id(left[0])] = chain
            else:
                left = ((lambda a, b: lambda e: 1 if a(e) or b(e) else 0)(a, b), "int", None)
        return left

    def _or(self):
        return self._logic(self._and, "||")

    def _and(self):
        return self._logic(self._equality, "&&")

    def _compare(self, op, left, right):
        (fa, ka, na), (fb, kb, nb) = left, right
        if ka == "name" or kb == "name":
            name, pos = (fa, nb) if ka == "name" else (fb, na)
            names = pos                        # the other side's enum names
            if ka == "name" and kb == "name" or names is None:
                self._fail("a quoted name is compared with an enum field only")
            if name not in names:
                self._fail('"%s" is not a name of that enum (%s)' % (name, ", ".join(names)))
            k = names.index(name)
            if ka == "name":
                fa = lambda e: k  # noqa: E731
            else:
                fb = lambda e: k  # noqa: E731
        f = _COMPARE[op]
        return (lambda e: 1 if f(fa(e), fb(e)) else 0), "int", None

    def _comparisons(self, sub, ops):
        left = sub()
        while self._peek() in ops:
            op = self._peek()
            self._pos += 1
            left = self._compare(op, left, sub())
        return left

    def _equality(self):
        return self._comparisons(self._relational, ("==", "!="))

    def _relational(self):
        return self._comparisons(self._additive, ("<", "<=", ">", ">="))

    def _binary(self, sub, ops):
        left = sub()
        while self._peek() in ops:
            op, pos = self._peek(), self._at()
            self._pos += 1
            right = sub()
            a = self._int(left, pos, "in arithmetic or logic")
            b = self._int(right, pos, "in arithmetic or logic")
            left = (_arith(op, a, b, pos), "int", None)
        return left

    def _additive(self):
        return self._binary(self._multiplicative, ("+", "-"))

    def _multiplicative(self):
        return self._binary(self._unary, ("*", "/", "%"))

    def _unary(self):
        p, pos = self._peek(), self._at()
        if p in ("!", "-"):
            self._pos += 1
            node = self._unary()
            if node[1] != "int":
                self._fail("'%s' of a float or a quoted name" % p, pos)
            a = node[0]
            if p == "!":
                return (lambda e: 0 if a(e) else 1), "int", None

            def neg(e):
                v = -a(e)
                if v > _I64_MAX:
                    _rule_fail(pos, "overflow")
                return v
            return neg, "int", None
        return self._primary()

    def _primary(self):
        kind, val, pos = self._toks[self._pos]
        if kind == "end":
            self._fail("expected a number, a name or '(' at the end")
        self._pos += 1
        if kind == "punct":
            if val != "(":
                self._pos -= 1
                self._fail("expected a number, a name or '('")
            node = self._ternary()
            self._expect(")", "expected ')'")
            return node
        if kind in ("dec", "hexint"):
            v = int(val, 16 if kind == "hexint" else 10)
            if v > _I64_MAX:
                self._fail("number out of range", pos)
            return (lambda e: v), "int", None
        if kind == "hexfloat":
            v = float.fromhex(val)
            return (lambda e: v), "float", None
        if kind == "name":
            return val[1:-1], "name", None          # resolved by its comparison
        if val in ("min", "max", "cdiv"):
            self._expect("(", "expected '(' after %s" % val)
            x = self._ternary()
            self._expect(",", "expected ',' (%s takes two arguments)" % val)
            y = self._ternary()
            self._expect(")", "expected ')'")
            a = self._int(x, pos, "an argument of %s" % val)
            b = self._int(y, pos, "an argument of %s" % val)
            if val == "min":
                return (lambda e: min(a(e), b(e))), "int", None
            if val == "max":
                return (lambda e: max(a(e), b(e))), "int", None

            def cdiv(e):
                x, y = a(e), b(e)
                if y == 0:
                    _rule_fail(pos, "cdiv by zero")
                q = -((-x) // y)
                if q > _I64_MAX:
                    _rule_fail(pos, "overflow")
                return q
            return cdiv, "int", None
        if val not in self._idents:
            self._fail("'%s' is not a scalar field of this rule's scope (%s)"
                       % (val, ", ".join(self._idents) or "none"), pos)
        self.refs.add(val)
        k, names = self._idents[val]
        if k == "oprule":                           # valid, meta_half: evaluated first
            def oprule(e):
                v = e.get(val, 0)
                if isinstance(v, _RuleEvalError):
                    raise _RuleEvalError("%s: %s" % (val, v))
                return v
            return oprule, "int", None
        return (lambda e: e.get(val, 0)), k, names


# ---- the description's objects ----------------------------------------------------------

class Field:
    """A field of an operation, as the registry describes it: key, type, role,
    names (enum), count (Rule, arrays), pattern (custom: the text of an ERE the
    whole value must match), cmp (outputs), optional, finite; is_array."""

    __slots__ = ("key", "type", "role", "names", "count", "pattern", "cmp", "optional", "finite",
                 "is_array", "_re", "_reads_record")

    def __repr__(self):
        return "Field(%s, %s, %s)" % (self.key, self.type, self.role)


class Op:
    """An operation: name, family (its name), summary, levels, variants,
    variants_since, legacy_variant, entries (list of dicts), rules (name ->
    Rule or None), fields (Field list in wire order); outputs (the output
    fields); field(key, role=None)."""

    def __init__(self):
        self.fields = []

    def field(self, key, role=None):
        for f in self.fields:
            if f.key == key and (role == f.role if role else f.role != "output"):
                return f
        return None

    @property
    def outputs(self):
        return [f for f in self.fields if f.role == "output"]

    def __repr__(self):
        return "Op(%s)" % self.name


class Family:
    """A family: name, title, spec, gpu (kvq has a CUDA path for it), level_sets,
    ops (Op list)."""

    def __repr__(self):
        return "Family(%s)" % self.name


class Registry:
    """A registry description: path, kvq_version, levels, level_sets,
    max_file_elems, id_max, status (list of (value, name)), flags (list of
    (bit, name)), flag_all, policy, families (Family list), ops (name -> Op);
    family(name), op(name), status_name(value)."""

    def family(self, name):
        return self._families.get(name)

    def op(self, name):
        return self.ops.get(name)

    def family_names(self):
        return [f.name for f in self.families]

    def status_name(self, value):
        return self.status[value][1] if 0 <= value < len(self.status) else "status %d" % value

    def __repr__(self):
        return "Registry(%s: %s)" % (self.path, ", ".join(self.family_names()))


_POSIX_CLASSES = {"alpha": "A-Za-z", "digit": "0-9", "alnum": "A-Za-z0-9", "upper": "A-Z", "lower": "a-z",
                  "xdigit": "0-9A-Fa-f", "space": " \\t\\n\\r\\f\\v", "blank": " \\t",
                  "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")}


def _ere(pattern):
    """A POSIX ERE -> a Python pattern of the same language (bracket
    expressions: [:class:] names, a backslash is literal, ] first is literal)."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch != "[":
            out.append(ch)
            i += 1
            continue
        j, body = i + 1, ["["]
        if j < n and pattern[j] == "^":
            body.append("^")
            j += 1
        first = True
        while j < n and (first or pattern[j] != "]"):
            if pattern.startswith("[:", j):
                k = pattern.find(":]", j + 2)
                cls = pattern[j + 2:k] if k > 0 else None
                if cls not in _POSIX_CLASSES:
                    raise re.error("unknown character class in '%s'" % pattern)
                body.append(_POSIX_CLASSES[cls])
                j = k + 2
            else:
                c = pattern[j]
                body.append("\\" + c if c in "\\[]^" and not (c == "^" and not first) else c)
                j += 1
            first = False
        if j >= n:
            raise re.error("unterminated bracket expression in '%s'" % pattern)
        body.append("]")
        out.append("".join(body))
        i = j + 1
    return "".join(out)


def _want(cond, path, what):
    if not cond:
        raise RegistryError(path, what)


def _obj(v, keys, path, where, optional=()):
    """An object with (at least) these members.  Members this reader does not
    know are ignored: what a reader must understand comes with a new
    kvq_registry version, so a newer kvq's description (a family's "gpu", say)
    still reads."""
    _want(isinstance(v, dict), path, "%s: not an object" % where)
    for k in keys:
        _want(k in v, path, "%s: no '%s'" % (where, k))
    return v


def _strlist(v, path, where, nonempty=True):
    _want(isinstance(v, list) and all(isinstance(s, str) and s for s in v) and (v or not nonempty)
          and len(set(v)) == len(v), path, "%s: not a list of distinct names" % where)
    return tuple(v)


def _int_member(v, path, where, lo=0):
    _want(isinstance(v, int) and not isinstance(v, bool) and v >= lo, path, "%s: not an integer >= %d" % (where, lo))
    return v


def _parse_rule(text, idents, path, where):
    try:
        return Rule(text, idents)
    except _RuleSyntaxError as e:
        raise RegistryError(path, "%s: rule '%s': %s" % (where, text, e)) from None


def _scalar_ident(f):
    """The (kind, names) of a field as a rule identifier, or None when a rule
    cannot name it (only u32, enum, f32 and status fields)."""
    if f.type in ("u32", "status"):
        return ("int", None)
    if f.type == "enum":
        return ("int", f.names)
    if f.type == "f32":
        return ("float", None)
    return None


def _build_op(d, fam, reg, path):
    where = "family %s, op %s" % (fam.name, d.get("name") if isinstance(d, dict) else "?")
    _obj(d, ("name", "summary", "levels", "variants", "variants_since", "legacy_variant", "entries", "rules",
             "fields"), path, where)
    op = Op()
    op.name, op.family, op.summary = d["name"], fam.name, d["summary"]
    _want(isinstance(op.name, str) and op.name and isinstance(op.summary, str), path, where + ": name, summary")
    op.levels = _strlist(d["levels"], path, where + ": levels")
    _want(all(lv in reg.levels for lv in op.levels), path, where + ": levels not among the registry's levels")
    op.variants = _strlist(d["variants"], path, where + ": variants", nonempty=False)
    op.variants_since = d["variants_since"]
    _want(op.variants_since is None or (isinstance(op.variants_since, str)
                                        and re.match(r"\d+\.\d+\.\d+\Z", op.variants_since)),
          path, where + ": variants_since")
    op.legacy_variant = _int_member(d["legacy_variant"], path, where + ": legacy_variant")
    _want(not op.variants or op.legacy_variant < len(op.variants), path, where + ": legacy_variant out of range")
    _want(isinstance(d["entries"], list), path, where + ": entries")
    op.entries = [dict(_obj(e, ("name", "sigver", "older", "older_variants"), path, where + ": entry"))
                  for e in d["entries"]]
    _want(isinstance(d["fields"], list) and d["fields"], path, where + ": fields")
    idents = {}                    # scalars of roles case and input
    for k, fd in enumerate(d["fields"]):
        fw = "%s, field %d" % (where, k)
        _obj(fd, ("key", "type", "role"), path, fw, ("names", "count", "pattern", "cmp", "optional", "finite"))
        f = Field()
        f.key, f.type, f.role = fd["key"], fd["type"], fd["role"]
        fw = "%s, field %s" % (where, f.key)
        _want(isinstance(f.key, str) and _RKEY_RE.match(f.key), path, fw + ": key")
        _want(f.type in _FIELD_TYPES, path, "%s: unknown type '%s'" % (fw, f.type))
        _want(f.role in _ROLES, path, "%s: unknown role '%s'" % (fw, f.role))
        f.is_array = f.type in _ARRAY_TYPES
        f.names = _strlist(fd["names"], path, fw + ": names") if f.type == "enum" else None
        _want((f.type == "enum") == ("names" in fd), path, fw + ": names belong to enum fields")
        _want(f.is_array == ("count" in fd), path, fw + ": a count belongs to (and is needed by) an array")
        _want((f.type == "custom") == ("pattern" in fd), path, fw + ": a pattern belongs to custom fields")
        f.cmp = fd.get("cmp", "judge" if f.role == "output" else None)
        _want((f.role == "output") == (f.cmp is not None) and (f.cmp is None or f.cmp in _CMPS),
              path, fw + ": cmp (judge | always | exact) belongs to outputs")
        for b in ("optional", "finite"):
            _want(fd.get(b, True) is True, path, "%s: %s is true when present" % (fw, b))
        f.optional, f.finite = "optional" in fd, "finite" in fd
        f.count = fd.get("count")          # the text; parsed below
        _want(not f.optional or (not f.is_array and f.role in ("case", "input")), path,
              fw + ": only a case or input scalar may be optional")
        _want(not f.finite or (f.type in ("a_f32", "a_f16", "a_c32") and f.role == "input"), path,
              fw + ": finite belongs to input arrays of floating-point values")
        f.pattern, f._re = fd.get("pattern"), None
        if f.pattern is not None:
            _want(isinstance(f.pattern, str), path, fw + ": pattern")
            try:
                f._re = re.compile(_ere(f.pattern))
            except re.error as e:
                raise RegistryError(path, "%s: pattern '%s': %s" % (fw, f.pattern, e)) from None
        op.fields.append(f)
        if f.role in ("case", "input") and not f.is_array:
            ident = _scalar_ident(f)
            if ident is not None:
                _want(f.key not in idents, path, fw + ": key given twice")
                idents[f.key] = ident
    vec = [f for f in op.fields if f.role != "output"]
    _want(len({f.key for f in vec}) == len(vec), path, where + ": a vector key given twice")
    _want(len({f.key for f in op.outputs}) == len(op.outputs), path, where + ": an output key given twice")
    for key, type_ in (("id", "id"), ("op", "op"), ("level", "enum"), ("status", "status")):
        f = op.field(key)
        _want(f is not None and f.type == type_ and f.role == "case", path,
              "%s: no case field '%s' of type %s" % (where, key, type_))
    _want(op.field("level").names == reg.levels, path, where + ": the level field's names are not the levels")
    var = op.field("variant")
    if op.variants:
        _want(var is not None and var.role == "case" and var.optional and
              (var.type == "u32" or (var.type == "enum" and var.names == op.variants)),
              path, where + ": variants need an optional case field 'variant' (u32, or enum of the variants)")
    for name in ("valid", "meta_half"):
        _want(name not in idents, path, "%s: a field may not be called '%s'" % (where, name))
    rules = _obj(d["rules"], _OP_RULES, path, where + ": rules")
    op.rules = {}
    for name in _OP_RULES:
        t = rules[name]
        op.rules[name] = None if t is None else _parse_rule(t, idents, path, "%s: rules.%s" % (where, name))
    _want(op.rules["valid"] is not None, path, where + ": rules.valid is null")
    _want((op.rules["amb_lo"] is None) == (op.rules["amb_hi"] is None), path, where + ": amb_lo and amb_hi")
    _want(op.rules["meta_half"] is not None or all(f.type != "a_meta" for f in op.fields), path,
          where + ": an a_meta field needs rules.meta_half")
    # count rules: the scalars before the field, of the case and the inputs or
    # of its own record, and the op rules valid and meta_half
    for i, f in enumerate(op.fields):
        if not f.is_array:
            f.count = None
            continue
        ids = {}
        for g in op.fields[:i]:
            ident = _scalar_ident(g)
            if ident is not None and not g.is_array and g.role in ("case", "input", f.role):
                ids[g.key] = ident
        ids.setdefault("valid", ("oprule", None))
        ids.setdefault("meta_half", ("oprule", None))
        f.count = _parse_rule(f.count, ids, path, "%s, field %s (%s): count" % (where, f.key, f.role))
        f._reads_record = any(g.key in f.count.refs for g in op.fields[:i]
                              if g.role == f.role and g.role not in ("case", "input"))
    for f in op.fields:
        _want(f.role != "case" or not f.is_array, path, "%s, field %s: an array of role case" % (where, f.key))
    op._vec = vec
    op._vec_keys = {f.key for f in vec}
    op._required = [f.key for f in vec if f.role in ("case", "input") and not f.optional]
    op._scalars = [f for f in vec if f.role in ("case", "input") and not f.is_array]
    op._outputs_ok = [f for f in vec if f.role in ("expected", "reference")]
    op._idents = idents
    return op


def parse_registry(data, path="<registry>"):
    """Parse the text (str or bytes) of a registry description -> Registry
    (RegistryError when it is malformed or disagrees with the frozen status
    numbers and flag bits)."""
    import json
    try:
        d = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (ValueError, UnicodeDecodeError) as e:
        raise RegistryError(path, "not JSON: %s" % e) from None
    _obj(d, ("kvq_registry", "kvq_version", "levels", "level_sets", "limits", "status", "flags", "policy",
             "families"), path, "the registry")
    _want(d["kvq_registry"] == REGISTRY_FORMAT and not isinstance(d["kvq_registry"], bool), path,
          "kvq_registry %r: this kvqio reads version %d" % (d["kvq_registry"], REGISTRY_FORMAT))
    reg = Registry()
    reg.path = path
    reg.kvq_version = d["kvq_version"]
    _want(isinstance(reg.kvq_version, str), path, "kvq_version")
    reg.levels = _strlist(d["levels"], path, "levels")
    reg.level_sets = _strlist(d["level_sets"], path, "level_sets")
    lim = _obj(d["limits"], ("max_file_elems", "id_max"), path, "limits")
    reg.max_file_elems = _int_member(lim["max_file_elems"], path, "limits.max_file_elems", 1)
    reg.id_max = _int_member(lim["id_max"], path, "limits.id_max", 1)
    reg._id_re = re.compile(r"[A-Za-z0-9._-]{1,%d}\Z" % reg.id_max)
    _want(isinstance(d["status"], list) and d["status"], path, "status")
    reg.status = []
    for k, s in enumerate(d["status"]):
        _obj(s, ("value", "name"), path, "status %d" % k)
        _want(s["value"] == k and isinstance(s["name"], str), path, "status %d: not in value order" % k)
        _want(_FROZEN_STATUS.get(s["name"], k) == k and (s["name"] in _FROZEN_STATUS or k >= len(_FROZEN_STATUS)),
              path, "status %d (%s) disagrees with the frozen numbers [API-STATUS-01]" % (k, s["name"]))
        reg.status.append((k, s["name"]))
    _want(len(reg.status) >= len(_FROZEN_STATUS), path, "status: a frozen status is missing [API-STATUS-01]")
    _want(isinstance(d["flags"], list), path, "flags")
    reg.flags, reg.flag_all = [], 0
    for k, fl in enumerate(d["flags"]):
        _obj(fl, ("bit", "name"), path, "flag %d" % k)
        b = _int_member(fl["bit"], path, "flag %d: bit" % k)
        _want(b < 32 and not reg.flag_all & (1 << b) and isinstance(fl["name"], str), path, "flag %d" % k)
        _want(_FROZEN_FLAGS.get(fl["name"], b) == b, path,
              "flag %s: bit %d disagrees with the frozen flags word [API-FLAGS-01]" % (fl["name"], b))
        reg.flags.append((b, fl["name"]))
        reg.flag_all |= 1 << b
    _want(all(any(n == name for _, n in reg.flags) for name in _FROZEN_FLAGS), path,
          "flags: a frozen flag is missing [API-FLAGS-01]")
    _want(isinstance(d["policy"], dict), path, "policy")
    reg.policy = {k: _strlist(v, path, "policy." + k) for k, v in d["policy"].items()}
    _want(isinstance(d["families"], list) and d["families"], path, "families")
    reg.families, reg._families, reg.ops = [], {}, {}
    for fd in d["families"]:
        _obj(fd, ("name", "title", "spec", "level_sets", "ops"), path, "family")
        fam = Family()
        fam.name, fam.title, fam.spec = fd["name"], fd["title"], fd["spec"]
        fam.gpu = fd.get("gpu") is True
        _want(isinstance(fam.name, str) and re.match(r"[a-z0-9_-]+\Z", fam.name) and fam.name not in reg._families,
              path, "family '%s': a new lowercase name" % (fam.name,))
        fam.level_sets = _strlist(fd["level_sets"], path, "family %s: level_sets" % fam.name, nonempty=False)
        _want(all(s in reg.level_sets for s in fam.level_sets), path,
              "family %s: a level set the registry does not list" % fam.name)
        _want(isinstance(fd["ops"], list) and fd["ops"], path, "family %s: ops" % fam.name)
        fam.ops = []
        for od in fd["ops"]:
            op = _build_op(od, fam, reg, path)
            _want(op.name not in reg.ops, path, "op %s listed twice" % op.name)
            reg.ops[op.name] = op
            fam.ops.append(op)
        fam._vec_keys = set().union(*(op._vec_keys for op in fam.ops))
        reg.families.append(fam)
        reg._families[fam.name] = fam
    return reg


def read_registry(path):
    """Read a registry description (RegistryError if it cannot be used)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise RegistryError(path, "cannot read the registry description: %s" % (e.strerror or e)) from None
    return parse_registry(data, path)


def default_registry_path():
    """$KVQ_REGISTRY, else registry.json beside this module (the installed
    copy), else ../registry.json (the source tree's conformance/registry.json)."""
    env = os.environ.get(REGISTRY_ENV)
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.join(here, "registry.json")
    if os.path.exists(beside):
        return beside
    up = os.path.join(os.path.dirname(here), "registry.json")
    return up if os.path.exists(up) else beside


_registry = None


def load_registry(path=None):
    """Read a registry description and use it from now on (path None: the
    default, see default_registry_path); returns the Registry."""
    global _registry
    reg = read_registry(default_registry_path() if path is None else path)
    _registry = reg
    return reg


def registry():
    """The registry in use (the default one is read on first use)."""
    return _registry if _registry is not None else load_registry()


_registry_in_use = registry      # (parse_vectors has an argument called registry)


def family_names():
    """The families of the registry in use, in its order."""
    return registry().family_names()


# ---- fields: decoding and encoding ---------------------------------------------------------

def _case_env(op, values):
    """The identifiers of op's rules for a case's decoded values: numbers,
    enum values as their index (an absent one reads as 0)."""
    env = {}
    for f in op._scalars:
        v = values.get(f.key)
        if v is None:
            continue
        if f.type == "enum":
            env[f.key] = f.names.index(v) if v in f.names else 0
        elif f.type in ("u32", "status", "f32"):
            env[f.key] = v
    return env


def _op_rules(op, env):
    """valid and meta_half into env: each its value, or the _RuleEvalError
    of its evaluation (raised where a count uses it)."""
    for name in ("valid", "meta_half"):
        r = op.rules[name]
        try:
            env[name] = 0 if r is None else r.evaluate(env)
        except _RuleEvalError as e:
            env[name] = e


def _half(env):
    """Whether a_meta arrays are binary16 (rule meta_half; 0 when it fails)."""
    v = env.get("meta_half", 0)
    return not isinstance(v, Exception) and v != 0


def _amb_range(op, env):
    """The code range of amb alternatives: rules amb_lo and amb_hi (0 and 255
    without them, or when they fail)."""
    lo, hi = 0, 255
    for name in ("amb_lo", "amb_hi"):
        r = op.rules[name]
        if r is not None:
            try:
                v = r.evaluate(env)
            except _RuleEvalError:
                continue
            if name == "amb_lo":
                lo = v
            else:
                hi = v
    return lo, hi


def _false_safe(fn, env):
    """A conjunct's value for a message (an evaluation error counts as true:
    && evaluated the conjuncts before the false one without error)."""
    try:
        return fn(env)
    except _RuleEvalError:
        return 1


def _count(f, env):
    """The element count of array field f (ValueError as kvq words it)."""
    try:
        n = f.count.evaluate(env)
    except _RuleEvalError as e:
        raise ValueError("%s: count '%s' %s" % (f.key, f.count.text, e)) from None
    if n < 0:
        raise ValueError("%s: count '%s' is negative (%d)" % (f.key, f.count.text, n))
    return n


def _decode_scalar(f, text, reg):
    t = f.type
    if t == "id":
        if not reg._id_re.match(text):
            raise ValueError("bad case id '%.70s'" % text)
        return text
    if t == "op":
        return text
    if t == "status":
        if not _DEC_RE.match(text) or int(text) >= len(reg.status):
            raise ValueError("status: '%.40s' is not a kvq_status" % text)
        return int(text)
    if t == "flags":
        u = decode_flags(text)
        if u & ~reg.flag_all:
            raise ValueError("flags: '%.40s' has bits outside KVQ_FLAG_ALL" % text)
        return u
    if t == "u32":
        return decode_u32(text, f.key)
    if t == "enum":
        if text not in f.names:
            raise ValueError("%s: unknown value '%.40s'" % (f.key, text))
        return text
    if t == "f32":
        return decode_f32(text, 1, f.key)[0]
    if t == "custom":
        if not f._re.fullmatch(text):
            raise ValueError("%s: '%.40s' does not match %s" % (f.key, text, f.pattern))
        return text
    raise ValueError("%s: not a scalar field" % f.key)


def _decode_words(text, n, width, what):
    _check_hex(text, width, n, what)
    return [int(text[i:i + width], 16) for i in range(0, len(text), width)]


def _decode_array(f, text, n, env, op):
    t = f.type
    if t == "a_f32":
        return decode_f32(text, n, f.key)
    if t == "a_f16":
        return decode_f16(text, n, f.key)
    if t == "a_meta":
        return decode_f16(text, n, f.key) if _half(env) else decode_f32(text, n, f.key)
    if t == "a_u8":
        return decode_bytes(text, n, f.key)
    if t == "a_u16":
        return _decode_words(text, n, 4, f.key)
    if t == "a_u32":
        return _decode_words(text, n, 8, f.key)
    if t == "a_c32":
        return decode_f32(text, None if n is None else 2 * n, f.key)
    if t == "amb":
        lo, hi = _amb_range(op, env)
        return decode_amb(text, n, lo, hi, f.key)
    raise ValueError("%s: not an array field" % f.key)


def _encode_value(f, v, env):
    t = f.type
    if t in ("id", "op", "custom"):
        return v
    if t == "enum":
        return v if isinstance(v, str) else f.names[v]
    if t in ("status", "u32"):
        return "%d" % v
    if t == "flags":
        return encode_flags(v)
    if t == "f32":
        return "%08x" % f32_bits(v)
    if t in ("a_f32", "a_c32"):
        return encode_f32(v)
    if t == "a_f16":
        return encode_f16(v)
    if t == "a_meta":
        return encode_f16(v) if _half(env) else encode_f32(v)
    if t == "a_u8":
        return encode_bytes(v)
    if t == "a_u16":
        return "".join("%04x" % (w & 0xFFFF) for w in v)
    if t == "a_u32":
        return encode_f32_words(v)
    if t == "amb":
        return encode_amb(v)
    raise ValueError("%s: cannot encode type %s" % (f.key, t))


def _is_zero(f, v):
    """An optional scalar at its default (not written) [VER-REG-05]."""
    if f.type == "enum":
        return v == f.names[0] or v == 0
    return v == 0



# ---- vector files -------------------------------------------------------------------

class Case:
    """One case of a vector file: see the module docstring."""

    __slots__ = ("op", "values", "line", "spec")

    def __init__(self, op, values, line=0, spec=None):
        self.op = op            # the operation's name, e.g. 'kivi-quant'
        self.values = values    # key -> decoded value, in schema order
        self.line = line        # line number in the file
        self.spec = spec        # the Op (registry description) it was read by

    id = property(lambda self: self.values["id"])
    level = property(lambda self: self.values["level"])
    status = property(lambda self: self.values["status"])

    def __getitem__(self, key):
        return self.values[key]

    def __contains__(self, key):
        return key in self.values

    def get(self, key, default=None):
        return self.values.get(key, default)

    def _op(self):
        if self.spec is None:
            self.spec = registry().op(self.op)
            if self.spec is None:
                raise ValueError("op %s is not in the registry %s" % (self.op, registry().path))
        return self.spec

    def env(self):
        """The values of the case's rule identifiers (enum values as their
        index), with the op rules valid and meta_half."""
        op = self._op()
        env = _case_env(op, self.values)
        _op_rules(op, env)
        return env

    def text(self, key, value=None):
        """The wire text of the case's field key (of a vector role), or of
        value encoded as that field (how an echo of an expected field is written)."""
        op = self._op()
        f = op.field(key)
        if f is None:
            raise KeyError(key)
        return _encode_value(f, self.values[key] if value is None else value, self.env())

    def output_text(self, key, value):
        """A subject's value of the case's output field key as its wire text:
        flags an int; binary32 arrays floats or array('f'); binary16 ones (and
        a_meta when meta_half holds) floats, 'invalid' for a value binary16
        cannot hold [VEC-RES-02]; bytes; words ints; custom text (its pattern
        checked)."""
        op = self._op()
        f = op.field(key, "output")
        if f is None:
            raise KeyError("%s is not an output of %s" % (key, op.name))
        env = self.env()
        if f.type == "a_f16" or (f.type == "a_meta" and _half(env)):
            return encode_meta(value, "f16")
        if f.type == "custom" and not f._re.fullmatch(value):
            raise ValueError("%s: '%.40s' does not match %s" % (key, value, f.pattern))
        return _encode_value(f, value, env)

    def encode_outputs(self, values):
        """The output fields of a status-0 result, in kvq's order, from a dict
        key -> value (see output_text): what ResultsWriter.result takes."""
        missing = [f.key for f in self._op().outputs if f.key not in values]
        if missing:
            raise KeyError("no value for the output%s %s of %s" % ("s" if len(missing) > 1 else "",
                                                                    ", ".join(missing), self.op))
        return [(f.key, self.output_text(f.key, values[f.key])) for f in self._op().outputs]

    def to_line(self):
        """The case line (no newline) re-encoded from the decoded values, in
        kvq's writer order: the bytes kvq gen writes for the same case."""
        op = self._op()
        env = self.env()
        ok = self.values.get("status") == 0
        parts = ["case"]
        for f in op._vec:
            if f.key not in self.values or (f.role in ("expected", "reference") and not ok):
                continue
            v = self.values[f.key]
            if f.optional and _is_zero(f, v):
                continue
            parts.append("%s=%s" % (f.key, _encode_value(f, v, env)))
        return " ".join(parts)

    def __repr__(self):
        return "Case(%s, op=%s, level=%s, status=%d, line %d)" % (
            self.id, self.op, self.level, self.status, self.line)


class VectorFile:
    """A parsed kvq-vectors file: see the module docstring."""

    def __init__(self, path, family, levels, seed, generator, cases, trailer=None):
        self.path, self.family, self.levels = path, family, levels
        self.seed, self.generator, self.cases, self.trailer = seed, generator, cases, trailer
        self.warnings = []
        self._by_id = {c.id: c for c in cases}

    def case(self, case_id):
        return self._by_id[case_id]

    def __iter__(self):
        return iter(self.cases)

    def __len__(self):
        return len(self.cases)

    def header_lines(self):
        """The magic and header lines as kvq writes them."""
        return ["%s %d" % (VEC_MAGIC, FORMAT_VERSION), "family " + self.family,
                "levels " + self.levels, "seed 0x%016x" % self.seed, "generator " + self.generator]

    def end_line(self, case_lines=None):
        """`end <count> fnv1a64:<digest>` of the case lines (default: the cases
        re-encoded) [VEC-FMT-07]."""
        if case_lines is None:
            case_lines = [c.to_line() for c in self.cases]
        h = FNV_OFFSET
        for ln in case_lines:
            h = fnv1a64(ln + "\n", h)
        return "end %d fnv1a64:%016x" % (len(case_lines), h)

    def to_text(self):
        """The whole file as kvq writes it: header, case lines, end line."""
        lines = [c.to_line() for c in self.cases]
        return "\n".join(self.header_lines() + lines + [self.end_line(lines)]) + "\n"


def _lines(data, path, ascii_only=True):
    """(line number, text) of every line, '\\n' split and a '\\r' before it removed.
    ascii_only: a byte above 0x7f is an error of its line (vector files); else
    text is read as UTF-8, undecodable bytes kept as surrogate escapes (results
    files, whose subject names and reasons come from subjects)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if b"\0" in data:
        raise FormatError(path, 0, "contains a NUL byte (not a text file)")
    pieces = data.split(b"\n")
    last = pieces.pop()                            # after the final '\n' (or the whole file)
    out = []
    for no, b in enumerate(pieces, 1):
        if b.endswith(b"\r"):                      # a '\r' right before '\n' is ignored
            b = b[:-1]
        out.append((no, b))
    if last:
        out.append((len(pieces) + 1, last))
    for k, (no, b) in enumerate(out):
        if not ascii_only:
            out[k] = (no, b.decode("utf-8", "surrogateescape"))
            continue
        try:
            out[k] = (no, b.decode("ascii"))
        except UnicodeDecodeError:
            raise FormatError(path, no, "not ASCII text") from None
    return out


def _is_content(s):
    t = s.lstrip(" \t")
    return t != "" and not t.startswith("#")


class _Reader:
    def __init__(self, data, path, ascii_only=True):
        self.path = path
        self.lines = _lines(data, path, ascii_only)
        self.pos = 0
        self.no = 0

    def next(self):
        if self.pos >= len(self.lines):
            return None
        self.no, s = self.lines[self.pos]
        self.pos += 1
        return s

    def next_content(self):
        while True:
            s = self.next()
            if s is None or _is_content(s):
                return s

    def fail(self, what, line=None):
        raise FormatError(self.path, self.no if line is None else line, what)

    def magic(self, magic):
        s = self.next()
        if s is None:
            raise FormatError(self.path, 1, "empty file, expected '%s %d'" % (magic, FORMAT_VERSION))
        tok = [t for t in _BLANK_RE.split(s) if t]
        if len(tok) != 2 or tok[0] != magic:
            self.fail("not a %s file (first line must be '%s %d')" % (magic, magic, FORMAT_VERSION))
        if not _DEC_RE.match(tok[1]) or int(tok[1]) != FORMAT_VERSION:
            self.fail("unsupported version '%.20s' (this reader reads %d)" % (tok[1], FORMAT_VERSION))

    def header(self, key, maxlen=63):
        s = self.next_content()
        if s is None:
            raise FormatError(self.path, self.no, "missing header line '%s'" % key)
        if not s.startswith(key + " ") or len(s) == len(key) + 1:
            self.fail("expected header line '%s <value>'" % key)
        v = s[len(key) + 1:]
        if len(v) > maxlen:
            self.fail("header '%s' too long" % key)
        return v


def _split_pairs(tokens, r):
    pairs = {}
    for t in tokens:
        k, eq, v = t.partition("=")
        if not eq:
            r.fail("field '%.40s' is not key=value" % t)
        if k in pairs:
            r.fail("key '%s' given twice" % k)
        pairs[k] = v
    return pairs


def _parse_case(tokens, fam, reg, r):
    """One case line (its tokens after 'case') of family fam, as kvq's reader
    reads it [VEC-FMT-03..05]: every check, in kvq's order."""
    p = _split_pairs(tokens, r)
    opname = p.get("op")
    if opname is None:
        r.fail("missing key 'op'")
    op = reg.op(opname)
    if op is None:
        r.fail("op: unknown operation '%.40s'" % opname)
    if op.family != fam.name:
        r.fail("op %s is not an operation of family %s" % (opname, fam.name))
    for k in p:
        if k not in op._vec_keys:
            if k in fam._vec_keys:
                r.fail("key '%s' is not a field of %s" % (k, opname))
            r.fail("unknown key '%.40s'" % k)
    for k in op._required:
        if k not in p:
            r.fail("missing key '%s'" % k)
    vals = {}
    try:
        for f in op._scalars:                     # scalars of the case and the inputs
            if f.key in p:
                vals[f.key] = _decode_scalar(f, p[f.key], reg)
            else:                                 # optional: 0
                vals[f.key] = f.names[0] if f.type == "enum" else 0
        if vals["level"] not in op.levels:
            if len(op.levels) == 1:
                raise ValueError("level: a %s case is judged at the %s level only" % (opname, op.levels[0]))
            raise ValueError("level: %s is not a level of %s" % (vals["level"], opname))
        var = op.field("variant")
        if op.variants and var.type == "u32" and vals["variant"] >= len(op.variants):
            raise ValueError("variant: %d is not a variant of %s" % (vals["variant"], opname))
        env = _case_env(op, vals)
        _op_rules(op, env)
        limit = reg.max_file_elems
        # the core's checks [VER-REG-02]: every array whose count the case's
        # scalars decide within the file limit, status 0 only when valid
        for f in op.fields:
            if f.is_array and f.type != "amb" and not f._reads_record:
                n = _count(f, env)
                if n > limit:
                    raise ValueError("%s: %d values, more than %d (count '%s')" % (f.key, n, limit, f.count.text))
        ok = vals["status"] == 0
        if ok:
            v = env["valid"]
            if isinstance(v, _RuleEvalError):
                raise ValueError("valid: '%s' %s" % (op.rules["valid"].text, v))
            if not v:
                first = next((t for t, fn in op.rules["valid"].conjuncts if not _false_safe(fn, env)), None)
                raise ValueError("parameters or shape not valid for a status-0 case%s (rule valid of %s)"
                                 % (": '%s' is false" % first if first else "", opname))
        for f in op._outputs_ok:
            if ok and f.key not in p:
                raise ValueError("missing key '%s' (status 0)" % f.key)
            if not ok and f.key in p:
                raise ValueError("key '%s' given for a case that expects an error" % f.key)
        renv = {}
        for f in op._vec:                         # the expected scalars: counts may read them
            if ok and f.role in ("expected", "reference") and not f.is_array:
                vals[f.key] = _decode_scalar(f, p[f.key], reg)
                if _scalar_ident(f) is not None:
                    renv.setdefault(f.role, {})[f.key] = \
                        f.names.index(vals[f.key]) if f.type == "enum" else vals[f.key]
        for f in op._vec:                         # arrays, in schema order
            if not f.is_array or f.key not in p:
                continue
            e = dict(env, **renv[f.role]) if f.role in renv else env
            if f.type == "amb":
                try:
                    n = _count(f, e)
                except ValueError:
                    n = 0
            else:
                n = _count(f, e)
                if n > limit:
                    raise ValueError("%s: more than %d values" % (f.key, limit))
            vals[f.key] = a = _decode_array(f, p[f.key], n, env, op)
            if ok and f.finite:
                w = 2 if f.type == "a_c32" else 1
                for i, x in enumerate(a):
                    if not math.isfinite(x):
                        raise ValueError("%s: element %d is %s (0x%s) in a status-0 case: a non-finite %s is "
                                         "an error status [VER-REG-02]" % (
                                             f.key, i // w, "NaN" if x != x else "infinite",
                                             p[f.key][8 * i:8 * i + 8] if f.type != "a_f16" else p[f.key][4 * i:4 * i + 4],
                                             f.key))
    except ValueError as e:
        r.fail(str(e))
    ordered = {f.key: vals[f.key] for f in op._vec if f.key in vals}
    return Case(opname, ordered, r.no, op)


def _generated_before(generator, version):
    """Whether the generator line names a kvq older than version (a tuple)."""
    m = re.match(r"kvq (\d+)\.(\d+)\.(\d+)", generator)
    return m is not None and tuple(int(x) for x in m.groups()) < version


def parse_vectors(data, path="<vectors>", check_digest=True, registry=None):
    """Parse the text (str or bytes) of a kvq-vectors file -> VectorFile.

    check_digest=False skips the end line's FNV-1a digest (pure Python costs
    about 0.35 us a byte: some 5 s for the 15 MB standard KIVI file); its
    count and form are still checked.  registry: the Registry to read it by
    (default: the one in use, see load_registry)."""
    reg = _registry_in_use() if registry is None else registry
    r = _Reader(data, path)
    r.magic(VEC_MAGIC)
    family = r.header("family")
    fam = reg.family(family)
    if fam is None:
        r.fail("unknown family '%s' (%s)" % (family, ", ".join(reg.family_names())))
    levels = r.header("levels")
    if levels not in fam.level_sets:
        r.fail("unknown level set '%s'" % levels)
    seed_text = r.header("seed")
    if len(seed_text) != 18 or not seed_text.startswith("0x") or not _HEX_RE.match(seed_text[2:]):
        r.fail("seed must be 0x followed by 16 hex digits")
    generator = r.header("generator")
    cases, seen, trailer, digest = [], {}, None, FNV_OFFSET
    while True:
        s = r.next_content()
        if s is None:
            break
        if trailer is not None:
            r.fail("content after the 'end' line")
        if s.startswith("end") and (len(s) == 3 or s[3] == " "):
            trailer = _end_line(s, len(cases), digest if check_digest else None, r)  # [VEC-FMT-07]
            continue
        if check_digest:
            digest = fnv1a64(s + "\n", digest)
        tok = [t for t in _BLANK_RE.split(s) if t]
        if tok[0] != "case":
            r.fail("expected a 'case' line, found '%.20s'" % tok[0])
        c = _parse_case(tok[1:], fam, reg, r)
        if c.id in seen:
            r.fail("case id '%s' repeats line %d" % (c.id, seen[c.id]))
        seen[c.id] = r.no
        cases.append(c)
    if not cases and trailer is None:  # a shard past the last case ends in 'end 0 ...' [VEC-GEN-03]
        r.fail("no cases")
    # an operation that gained variants: the cases of older files are of the
    # variant it had then [VER-REG-05] (cert-step before 0.4.0: sparse [CERT-VAR-02])
    for c in cases:
        op = c.spec
        if op.variants_since is not None and _generated_before(
                generator, tuple(int(x) for x in op.variants_since.split("."))):
            var = op.field("variant")
            c.values["variant"] = var.names[op.legacy_variant] if var.type == "enum" else op.legacy_variant
    vf = VectorFile(path, family, levels, int(seed_text[2:], 16), generator, cases, trailer)
    if trailer is None:
        if writes_end_line(generator):
            r.fail("no end line after %d cases: the file is cut short (its generator, %s, always "
                   "writes one) [VEC-FMT-07]" % (len(cases), generator))
        msg = ("%s: no end line (generator '%s'): a copy cut at a line boundary cannot be told "
               "from the whole file [VEC-FMT-07]" % (path, generator))
        vf.warnings.append(msg)
        warnings.warn(msg, KvqFormatWarning, stacklevel=2)
    return vf


def fnv1a64(data, h=None):
    """64-bit FNV-1a of data (str: its ASCII bytes), continuing from h."""
    if isinstance(data, str):
        data = data.encode("ascii")
    h = FNV_OFFSET if h is None else h
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def writes_end_line(generator):
    """Whether a generator line names a kvq that always writes the end line
    (kvq 0.2 and later) [VEC-FMT-07]."""
    m = re.match(r"kvq\s*(\d+)\.(\d+)\.", generator)
    return bool(m) and (int(m.group(1)) > 0 or int(m.group(2)) >= 2)


def _end_line(s, ncases, digest, r):
    """`end <count> fnv1a64:<16 hex>`: the count and the digest of the case
    lines before it must agree [VEC-FMT-07]; returns the line's text."""
    tok = [t for t in _BLANK_RE.split(s) if t]
    if (len(tok) != 3 or not _DEC_RE.match(tok[1]) or int(tok[1]) >= 1 << 64
            or not tok[2].startswith("fnv1a64:") or len(tok[2]) != 24 or not _HEX_RE.match(tok[2][8:])):
        r.fail("the end line must be 'end <cases> fnv1a64:<16 hex digits>'")
    if int(tok[1]) != ncases:
        r.fail("the end line counts %s cases, the file holds %d (a file cut short or cases lost)"
               % (tok[1], ncases))
    if digest is not None and int(tok[2][8:], 16) != digest:
        r.fail("the case lines' digest is fnv1a64:%016x, the end line says %s (a case line changed)"
               % (digest, tok[2]))
    return s


def read_vectors(path, check_digest=True, registry=None):
    """Read and parse a kvq-vectors file -> VectorFile (FormatError if malformed)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return parse_vectors(data, os.fspath(path), check_digest, registry)


# ---- results files ---------------------------------------------------------------------

Result = namedtuple("Result", "id status skipped touched fields line")
Result.__doc__ = ("One result line: status None when skipped; touched: the output a failed "
                  "call wrote [VEC-RES-03] or None; fields: key -> text.")


class ResultsFile:
    def __init__(self, path, subject, unavailable, results):
        self.path, self.subject, self.unavailable = path, subject, unavailable
        self.results = results
        self._by_id = {r.id: r for r in results}

    def result(self, case_id):
        return self._by_id[case_id]

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)


def parse_results(data, path="<results>", registry=None):
    """Parse the text of a kvq-results file -> ResultsFile (as kvq reads it:
    output fields stay text; they are decoded against the case's operation).
    A status-0 key that no operation of the registry has as an output is an
    error of the file [VEC-RES-02]; one of another operation fails only its case."""
    reg = _registry_in_use() if registry is None else registry
    outputs = {f.key for op in reg.ops.values() for f in op.outputs}
    r = _Reader(data, path, ascii_only=False)
    r.magic(RES_MAGIC)
    subject = r.header("subject")
    unavailable, results, seen = None, [], {}
    while True:
        s = r.next_content()
        if s is None:
            break
        if s.startswith("unavailable "):
            if results or unavailable is not None:
                r.fail("'unavailable' must come alone, before any result")
            unavailable = s[12:]
            continue
        tok = [t for t in _BLANK_RE.split(s) if t]
        if tok[0] != "result":
            r.fail("expected a 'result' line")
        if unavailable is not None:
            r.fail("a result after 'unavailable'")
        p = _split_pairs(tok[1:], r)
        for k in p:
            if not _RKEY_RE.match(k):
                r.fail("bad key '%.40s'" % k)
        rid, status, skipped = p.get("id"), p.get("status"), p.get("skipped")
        if rid is None or (status is None) == (skipped is None):
            r.fail("a result needs id= and status= (or skipped=, without status=)")
        if not _ID_RE.match(rid):
            r.fail("bad case id '%.70s'" % rid)
        if skipped is not None:
            if len(p) > 2:
                r.fail("output fields given with skipped=")
            if skipped == "":
                r.fail("skipped= needs a reason")
            res = Result(rid, None, skipped, None, {}, r.no)
        else:
            if not _DEC_RE.match(status) or int(status) > 255:
                r.fail("status: '%.40s' is not a decimal status" % status)
            touched = p.get("touched")
            fields = {k: v for k, v in p.items() if k not in ("id", "status", "touched")}
            if int(status) != 0:
                if fields:
                    r.fail("key '%s' given with a nonzero status" % next(iter(fields)))
                if touched is not None and not _RKEY_RE.match(touched):
                    r.fail("touched= needs the key of an output")
            elif touched is not None:
                r.fail("touched= belongs to a result with a nonzero status")
            else:
                for k in fields:
                    if k not in outputs:
                        r.fail("unknown key '%.40s' (no operation has such an output)" % k)
            res = Result(rid, int(status), None, touched, fields, r.no)
        if rid in seen:
            r.fail("result for '%s' repeats line %d" % (rid, seen[rid]))
        seen[rid] = r.no
        results.append(res)
    return ResultsFile(path, subject, unavailable, results)


def read_results(path, registry=None):
    with open(path, "rb") as fh:
        data = fh.read()
    return parse_results(data, os.fspath(path), registry)


class ResultsWriter:
    """Writes a kvq-results file atomically: see the module docstring."""

    def __init__(self, path, subject, unavailable=None):
        path = os.fspath(path)
        if not subject or len(subject) > 63 or any(ch in subject for ch in "\r\n\0") or not subject.isascii():
            raise ValueError("subject: 1 to 63 ASCII characters on one line")
        if unavailable is not None and (not unavailable.strip() or any(ch in unavailable for ch in "\r\n\0")):
            raise ValueError("unavailable: a reason on one line")
        self.path = path
        self._tmp = None
        # As kvq writes its files [VER-RUN-04], [VER-OUT-02]: a character
        # device or a pipe is written in place, a symbolic link is followed
        # (its target replaced), a directory is an error; anything else is
        # written to a new temporary file beside it and renamed into place.
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            self._fh = open(path, "w", encoding="ascii", newline="\n")
        else:
            self._target = os.path.realpath(path)
            d = os.path.dirname(self._target)
            fd, self._tmp = tempfile.mkstemp(prefix="." + os.path.basename(self._target)[:100] + ".",
                                             suffix=".tmp", dir=d)
            self._fh = os.fdopen(fd, "w", encoding="ascii", newline="\n")
        self._ids = set()
        self._closed = False
        self._unavailable = unavailable is not None
        self._fh.write("%s %d\nsubject %s\n" % (RES_MAGIC, FORMAT_VERSION, subject))
        if unavailable is not None:
            self._fh.write("unavailable %s\n" % unavailable)

    def _id(self, case_or_id):
        rid = case_or_id.id if isinstance(case_or_id, Case) else case_or_id
        if not _ID_RE.match(rid):
            raise ValueError("bad case id %r" % (rid,))
        if rid in self._ids:
            raise ValueError("a second result for %r" % (rid,))
        if self._unavailable:
            raise ValueError("no result may follow 'unavailable'")
        self._ids.add(rid)
        return rid

    def result(self, case_or_id, status, outputs=(), touched=None):
        """`result id=... status=...` and, with status 0, the output fields;
        with a nonzero status, touched=<key> names an output the failed call
        wrote (its case then FAILs) [VEC-RES-03]."""
        if not isinstance(status, int) or not 0 <= status <= 255:
            raise ValueError("status must be an int in 0..255")
        items = list(outputs.items() if isinstance(outputs, dict) else outputs)
        if status != 0 and items:
            raise ValueError("output fields with a nonzero status")
        if touched is not None and (status == 0 or not _RKEY_RE.match(touched)):
            raise ValueError("touched: the key of an output, with a nonzero status only")
        rid = self._id(case_or_id)
        parts = ["result id=%s status=%d" % (rid, status)]
        if touched is not None:
            parts.append("touched=" + touched)
        keys = set()
        for k, v in items:
            if not _RKEY_RE.match(k) or k in ("id", "status", "skipped") or k in keys:
                raise ValueError("bad or repeated output key %r" % (k,))
            keys.add(k)
            if k == "flags" and isinstance(v, int):
                v = encode_flags(v)
            if not isinstance(v, str) or _BLANK_RE.search(v) or "\n" in v or not v.isascii():
                raise ValueError("output %s: an ASCII token (empty for an array of no values)" % k)
            parts.append("%s=%s" % (k, v))
        self._fh.write(" ".join(parts) + "\n")

    def skipped(self, case_or_id, reason):
        """`result id=... skipped=<reason>`: SKIP, never PASS [VEC-CERT-06]."""
        if not reason or _BLANK_RE.search(reason) or "\n" in reason or "=" in reason:
            raise ValueError("skipped: one token of reason")
        self._fh.write("result id=%s skipped=%s\n" % (self._id(case_or_id), reason))

    def comment(self, text):
        for ln in str(text).splitlines() or [""]:
            self._fh.write("# %s\n" % ln)

    def close(self):
        """Finish the file and rename it into place."""
        if self._closed:
            return
        self._closed = True
        try:
            self._fh.flush()
            if self._tmp is not None:
                os.fsync(self._fh.fileno())
            self._fh.close()
            if self._tmp is not None:
                os.replace(self._tmp, self._target)
        except BaseException:
            self._remove()
            raise

    def abort(self):
        """Drop the temporary file; nothing appears under path."""
        if self._closed:
            return
        self._closed = True
        self._fh.close()
        self._remove()

    def _remove(self):
        if self._tmp is None:
            return
        try:
            os.unlink(self._tmp)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


# ---- command line: python3 kvqio.py --check FILE.vec ... ---------------------------------

_USAGE = """usage: python3 kvqio.py [--registry REGISTRY.json] --check FILE.vec...

--check: read each vector file as kvq reads it (every family the registry
describes; the end line's count and digest checked) and re-encode it: exit 0
when every file reads and re-encodes byte for byte, 2 with 'file:line: what'
otherwise.  --registry (or $KVQ_REGISTRY): the registry description to read
them by (default: registry.json beside this module, as `kvq ops --json`
writes it)."""


def _check_file(path, reg):
    """None when path reads and round-trips byte for byte, else 'file:line: what'."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        return "%s: %s" % (path, e.strerror or e)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KvqFormatWarning)
            vf = parse_vectors(data, path, True, reg)
    except FormatError as e:
        return str(e)
    got = vf.to_text()
    if vf.trailer is None:                      # a file without an end line: compare the rest
        got = got[:got.rstrip("\n").rfind("\n") + 1]
    text = data.decode("ascii")
    if got == text:
        return None
    want, have = text.split("\n"), got.split("\n")
    for k, ln in enumerate(have):
        if k >= len(want) or want[k] != ln:
            return ("%s:%d: re-encodes differently: kvq's writer writes '%.60s%s' (comments, blank lines, "
                    "extra blanks and \\r are not written back)" % (path, k + 1, ln, "..." if len(ln) > 60 else ""))
    return "%s:%d: re-encodes differently: the file goes on after the end line" % (path, len(have))


def main(argv=None):
    """The command line (see _USAGE): returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    reg_path, files, check = None, [], False
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(_USAGE)
            return 0
        if a == "--registry" and args:
            reg_path = args.pop(0)
        elif a == "--check":
            check = True
        elif a.startswith("-") and a != "-":
            sys.stderr.write("kvqio: unknown option '%s'\n%s\n" % (a, _USAGE))
            return 2
        else:
            files.append(a)
    if not check or not files:
        sys.stderr.write(_USAGE + "\n")
        return 2
    try:
        reg = read_registry(reg_path if reg_path is not None else default_registry_path())
    except FormatError as e:
        sys.stderr.write("kvqio: %s\n" % e)
        return 2
    status = 0
    for path in files:
        err = _check_file(path, reg)
        if err is not None:
            sys.stderr.write("kvqio: %s\n" % err)
            status = 2
        else:
            print("%s: reads and re-encodes byte for byte" % path)
    return status


if __name__ == "__main__":
    sys.exit(main())
