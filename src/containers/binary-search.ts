/**
 * Binary search over a sorted numeric sequence given by an accessor (issue 29 "one binary
 * search"). The sequence is `at(0) .. at(length - 1)`, ascending (equal neighbours allowed); the
 * accessor lets one search serve typed arrays, plain arrays of records and values computed per
 * index (a message's creation time) without copying. O(log length) calls of `at`.
 */

/**
 * The first index `i` in 0..length whose value is not less than `v` (`at(i) >= v`), or `length`
 * when every value is less. Input: the sequence length, the accessor (ascending values), the
 * value sought.
 */
export function lowerBound(length: number, at: (i: number) => number, v: number): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (at(mid) < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The first index `i` in 0..length whose value is greater than `v` (`at(i) > v`), or `length`
 * when no value is. `upperBound(...) - 1` is the last index whose value is at most `v` (-1 when
 * none is). Input: the sequence length, the accessor (ascending values), the value sought.
 */
export function upperBound(length: number, at: (i: number) => number, v: number): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (at(mid) <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
