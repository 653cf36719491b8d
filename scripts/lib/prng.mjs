/**
 * Small deterministic PRNG (mulberry32): `prng(seed)` returns a function of uniform numbers in
 * [0, 1), the same sequence for the same seed, so a failing run can be replayed with its seed.
 * Shared by the crash test, the posted-archive benchmark's word sampling and the area snapshot test.
 */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
