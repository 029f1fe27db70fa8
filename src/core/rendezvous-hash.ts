// The hash behind weighted rendezvous assignment, specified exactly so that any component, in
// any language, computes the same owner for the same (instance, target):
//
//   h     = FNV-1a 64 over UTF-8(instance) ‖ 0x00 ‖ UTF-8(target), then MurmurHash3's fmix64
//   u     = (top 52 bits of h + 1/2) / 2^52                ∈ (0, 1), never 0 or 1
//   score = −weight / ln(u)                                highest wins, ties to the smaller name
//
// −ln(u) is Exp(1); divided by the weight it is Exp(weight), and the minimum of independent
// exponentials falls on member i with probability weight_i / Σ weight exactly. Scoring with
// weight × hash instead does not give proportional shares (2:1 weights win 75%, not 67%).
// fmix64 is there because FNV's last multiply leaves the instances' draws for one target
// visibly correlated in the high bits; it costs a few multiplies per draw.
//
// Why 52 bits and a half: u must lie strictly inside (0, 1), since ln(0) and ln(1) make a score
// of 0 or −∞ (a one-member pool with no winner). A double holds 53 significant bits, and there
// are only 2^53 − 1 multiples of 2^−53 strictly inside (0, 1), so 53 bits cannot all map there
// exactly; (k + 1)/(2^53 + 1) rounds its denominator to 2^53 and reaches 1. (2k + 1)/2^53 for a
// 52-bit k is exact (2k + 1 < 2^53), symmetric, and lies in [2^−53, 1 − 2^−53].
//
// JavaScript has no cheap 64-bit integers (BigInt is ~50× slower), so the state is two
// unsigned 32-bit halves and every multiply is spelled out on them.

const FNV_OFFSET_HI = 0xcbf29ce4;
const FNV_OFFSET_LO = 0x84222325;
// FNV 64 prime = 2^40 + 0x1b3.
const FNV_PRIME_LOW_PART = 0x1b3;
const TWO_32 = 4294967296;
const TWO_52 = 2 ** 52;

/** Two unsigned 32-bit halves of an in-progress 64-bit FNV-1a state. */
export interface HashState {
  hi: number;
  lo: number;
}

/** Draws u ∈ (0,1) for (prefix, target), where prefix is the state after `instance ‖ 0x00`. */
export function drawFrom(prefix: HashState, target: string): number {
  // The FNV state as four 16-bit limbs (v0 lowest): every intermediate stays a small integer,
  // which V8 keeps in registers. × (2^40 + 0x1b3) is ×0x1b3 per limb plus limbs 0–1 shifted
  // into limbs 2–3 by 8 bits.
  let v0 = prefix.lo & 0xffff;
  let v1 = prefix.lo >>> 16;
  let v2 = prefix.hi & 0xffff;
  let v3 = prefix.hi >>> 16;
  for (let i = 0; i < target.length; i++) {
    const code = target.charCodeAt(i);
    if (code >= 0x80) {
      return drawNonAscii({ hi: ((v3 << 16) | v2) >>> 0, lo: ((v1 << 16) | v0) >>> 0 }, target, i);
    }
    v0 ^= code;
    const t0 = v0 * FNV_PRIME_LOW_PART;
    let t1 = v1 * FNV_PRIME_LOW_PART;
    let t2 = v2 * FNV_PRIME_LOW_PART + (v0 << 8);
    const t3 = v3 * FNV_PRIME_LOW_PART + (v1 << 8);
    t1 += t0 >>> 16;
    v0 = t0 & 0xffff;
    t2 += t1 >>> 16;
    v1 = t1 & 0xffff;
    v3 = (t3 + (t2 >>> 16)) & 0xffff;
    v2 = t2 & 0xffff;
  }
  return finishDraw(((v3 << 16) | v2) >>> 0, ((v1 << 16) | v0) >>> 0);
}

/** The state after hashing `instance ‖ 0x00`; compute once per instance, reuse for every target. */
export function prefixState(instance: string): HashState {
  const state = feedBytes(FNV_OFFSET_HI, FNV_OFFSET_LO, new TextEncoder().encode(instance));
  return feedBytes(state.hi, state.lo, new Uint8Array([0]));
}

/** u for one (instance, target) pair; the slow path, for tests and explanations. */
export function draw(instance: string, target: string): number {
  return drawFrom(prefixState(instance), target);
}

/** The rendezvous score of a member with this weight for a draw u. */
export function scoreOf(weight: number, u: number): number {
  return -weight / Math.log(u);
}

function drawNonAscii(state: HashState, target: string, from: number): number {
  const rest = feedBytes(state.hi, state.lo, new TextEncoder().encode(target.slice(from)));
  return finishDraw(rest.hi, rest.lo);
}

function feedBytes(hi: number, lo: number, bytes: Uint8Array): HashState {
  for (const byte of bytes) {
    lo = (lo ^ byte) >>> 0;
    const loTimesLowPart = lo * FNV_PRIME_LOW_PART;
    hi = (Math.imul(hi, FNV_PRIME_LOW_PART) + (lo << 8) + Math.floor(loTimesLowPart / TWO_32)) >>> 0;
    lo = loTimesLowPart >>> 0;
  }
  return { hi, lo };
}

// fmix64: k ^= k >>> 33; k *= 0xff51afd7ed558ccd; k ^= k >>> 33; k *= 0xc4ceb9fe1a85ec53; k ^= k >>> 33.
// The multiplies are inlined (no intermediate objects): this runs once per draw, millions of
// times in a full recompute.
function finishDraw(hi: number, lo: number): number {
  lo = (lo ^ (hi >>> 1)) >>> 0;
  let h = mulHigh(hi, lo, 0xff51afd7, 0xed558ccd);
  let l = Math.imul(lo, 0xed558ccd) >>> 0;
  l = (l ^ (h >>> 1)) >>> 0;
  const h2 = mulHigh(h, l, 0xc4ceb9fe, 0x1a85ec53);
  l = Math.imul(l, 0x1a85ec53) >>> 0;
  h = h2;
  l = (l ^ (h >>> 1)) >>> 0;
  return unitFromHash(h, l);
}

/** The draw u ∈ (0, 1) of a finished 64-bit hash: its top 52 bits k, as (k + 1/2) / 2^52, exactly. */
export function unitFromHash(hi: number, lo: number): number {
  const top52 = hi * 1048576 + (lo >>> 12);
  return (top52 + 0.5) / TWO_52;
}

// High 32 bits of the low 64 bits of (aHi·2^32 + aLo) × (bHi·2^32 + bLo). The low 32 bits are
// Math.imul(aLo, bLo). aLo × bLo is split into 16-bit limbs so no partial product exceeds 2^53.
function mulHigh(aHi: number, aLo: number, bHi: number, bLo: number): number {
  const a0 = aLo & 0xffff;
  const a1 = aLo >>> 16;
  const b0 = bLo & 0xffff;
  const b1 = bLo >>> 16;
  const mid = a1 * b0 + a0 * b1 + ((a0 * b0) >>> 16);
  const carry = Math.floor(mid / 65536) + a1 * b1;
  return (carry + Math.imul(aHi, bLo) + Math.imul(aLo, bHi)) >>> 0;
}
