// Table-free special functions (the module's static data must stay small): exp (scalar and
// f64x2), log, erf, erfc. exp and log follow fdlibm/musl (error < 1 ulp); erf/erfc follow
// fdlibm's s_erf.c rational approximations (error < 1 ulp).

const LN2_HI: f64 = 6.93147180369123816490e-01;
const LN2_LO: f64 = 1.90821492927058770002e-10;
const INV_LN2: f64 = 1.44269504088896338700e+00;
const P1: f64 = 1.66666666666666019037e-01;
const P2: f64 = -2.77777777770155933842e-03;
const P3: f64 = 6.61375632143793436117e-05;
const P4: f64 = -1.65339022054652515390e-06;
const P5: f64 = 4.13813679705723846039e-08;

/** exp of both lanes. Inputs are clamped to [-746, 710] first (exp underflows to 0 / overflows to inf there); NaN stays NaN. */
@inline export function expv(x0: v128): v128 {
  const x = f64x2.pmin(f64x2.pmax(x0, f64x2.splat(-746.0)), f64x2.splat(710.0));
  const kf = f64x2.nearest(f64x2.mul(x, f64x2.splat(INV_LN2)));
  const hi = f64x2.sub(x, f64x2.mul(kf, f64x2.splat(LN2_HI)));
  const lo = f64x2.mul(kf, f64x2.splat(LN2_LO));
  const r = f64x2.sub(hi, lo);
  const rr = f64x2.mul(r, r);
  const rq = f64x2.mul(rr, rr);
  // c = r - (rr*P1 + rq*((P2 + rr*P3) + rq*(P4 + rr*P5)))
  const t0 = f64x2.add(f64x2.splat(P2), f64x2.mul(rr, f64x2.splat(P3)));
  const t1 = f64x2.add(f64x2.splat(P4), f64x2.mul(rr, f64x2.splat(P5)));
  const c = f64x2.sub(r, f64x2.add(f64x2.mul(rr, f64x2.splat(P1)), f64x2.mul(rq, f64x2.add(t0, f64x2.mul(rq, t1)))));
  // y = 1 + (r*c/(2-c) - lo + hi)
  const y = f64x2.add(
    f64x2.splat(1.0),
    f64x2.add(f64x2.sub(f64x2.div(f64x2.mul(r, c), f64x2.sub(f64x2.splat(2.0), c)), lo), hi),
  );
  // y * 2^k as y * 2^k1 * 2^k2 with k1 = k >> 1, k2 = k - k1 (both normal exponents).
  const k = i64x2.extend_low_i32x4_s(i32x4.trunc_sat_f64x2_s_zero(kf));
  const k1 = i64x2.shr_s(k, 1);
  const k2 = i64x2.sub(k, k1);
  const bias = i64x2.splat(1023);
  const s1 = i64x2.shl(i64x2.add(k1, bias), 52);
  const s2 = i64x2.shl(i64x2.add(k2, bias), 52);
  return f64x2.mul(f64x2.mul(y, s1), s2);
}

/** Scalar exp (lane 0 of expv). */
@inline export function expd(x: f64): f64 {
  return f64x2.extract_lane(expv(f64x2.splat(x)), 0);
}

const Lg1: f64 = 6.666666666666735130e-01;
const Lg2: f64 = 3.999999999940941908e-01;
const Lg3: f64 = 2.857142874366239149e-01;
const Lg4: f64 = 2.222219843214978396e-01;
const Lg5: f64 = 1.818357216161805012e-01;
const Lg6: f64 = 1.531383769920937332e-01;
const Lg7: f64 = 1.479819860511658591e-01;

/** Natural log (fdlibm), table-free. */
export function logd(x0: f64): f64 {
  let x = x0;
  let u = reinterpret<u64>(x);
  let hx = <u32>(u >> 32);
  let k = 0;
  if ((hx >> 31) != 0 || hx < 0x00100000) {
    if (u << 1 == 0) return -Infinity;
    if ((hx >> 31) != 0) return NaN;
    k -= 54;
    x *= 18014398509481984.0; // 2^54
    u = reinterpret<u64>(x);
    hx = <u32>(u >> 32);
  } else if (hx >= 0x7ff00000) {
    return x;
  } else if (hx == 0x3ff00000 && u << 32 == 0) {
    return 0;
  }
  hx += 0x3ff00000 - 0x3fe6a09e;
  k += (<i32>hx >> 20) - 0x3ff;
  hx = (hx & 0x000fffff) + 0x3fe6a09e;
  u = ((<u64>hx) << 32) | (u & 0xffffffff);
  x = reinterpret<f64>(u);
  const f = x - 1.0;
  const hfsq = 0.5 * f * f;
  const s = f / (2.0 + f);
  const z = s * s;
  const w = z * z;
  const t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
  const t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
  const r = t2 + t1;
  const dk = <f64>k;
  return s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
}

// ---- erf / erfc (fdlibm s_erf.c coefficients)
const erx: f64 = 8.45062911510467529297e-01;
const efx: f64 = 1.28379167095512586316e-01;
const efx8: f64 = 1.02703333676410069053e+00;
const pp0: f64 = 1.28379167095512558561e-01;
const pp1: f64 = -3.25042107247001499370e-01;
const pp2: f64 = -2.84817495755985104766e-02;
const pp3: f64 = -5.77027029648944159157e-03;
const pp4: f64 = -2.37630166566501626084e-05;
const qq1: f64 = 3.97917223959155352819e-01;
const qq2: f64 = 6.50222499887672944485e-02;
const qq3: f64 = 5.08130628187576562776e-03;
const qq4: f64 = 1.32494738004321644526e-04;
const qq5: f64 = -3.96022827877536812320e-06;
const pa0: f64 = -2.36211856075265944077e-03;
const pa1: f64 = 4.14856118683748331666e-01;
const pa2: f64 = -3.72207876035701323847e-01;
const pa3: f64 = 3.18346619901161753674e-01;
const pa4: f64 = -1.10894694282396677476e-01;
const pa5: f64 = 3.54783043256182359371e-02;
const pa6: f64 = -2.16637559486879084300e-03;
const qa1: f64 = 1.06420880400844228286e-01;
const qa2: f64 = 5.40397917702171048937e-01;
const qa3: f64 = 7.18286544141962662868e-02;
const qa4: f64 = 1.26171219808761642112e-01;
const qa5: f64 = 1.36370839120290507362e-02;
const qa6: f64 = 1.19844998467991074170e-02;
const ra0: f64 = -9.86494403484714822705e-03;
const ra1: f64 = -6.93858572707181764372e-01;
const ra2: f64 = -1.05586262253232909814e+01;
const ra3: f64 = -6.23753324503260060396e+01;
const ra4: f64 = -1.62396669462573470355e+02;
const ra5: f64 = -1.84605092906711035994e+02;
const ra6: f64 = -8.12874355063065934246e+01;
const ra7: f64 = -9.81432934416914548592e+00;
const sa1: f64 = 1.96512716674392571292e+01;
const sa2: f64 = 1.37657754143519042600e+02;
const sa3: f64 = 4.34565877475229228821e+02;
const sa4: f64 = 6.45387271733267880336e+02;
const sa5: f64 = 4.29008140027567833386e+02;
const sa6: f64 = 1.08635005541779435134e+02;
const sa7: f64 = 6.57024977031928170135e+00;
const sa8: f64 = -6.04244152148580987438e-02;
const rb0: f64 = -9.86494292470009928597e-03;
const rb1: f64 = -7.99283237680523006574e-01;
const rb2: f64 = -1.77579549177547519889e+01;
const rb3: f64 = -1.60636384855821916062e+02;
const rb4: f64 = -6.37566443368389627722e+02;
const rb5: f64 = -1.02509513161107724954e+03;
const rb6: f64 = -4.83519191608651397019e+02;
const sb1: f64 = 3.03380607434824582924e+01;
const sb2: f64 = 3.25792512996573918826e+02;
const sb3: f64 = 1.53672958608443695994e+03;
const sb4: f64 = 3.19985821950859553908e+03;
const sb5: f64 = 2.55305040643316442583e+03;
const sb6: f64 = 4.74528541206955367215e+02;
const sb7: f64 = -2.24409524465858183362e+01;

/** erfc(x) / (exp(-x^2) / x) style tail for 1.25 <= x < 28: returns erfc(x) for x > 0. */
function erfcTail(x: f64): f64 {
  const s = 1.0 / (x * x);
  let R: f64, S: f64;
  if (x < 2.857142857142857) {
    R = ra0 + s * (ra1 + s * (ra2 + s * (ra3 + s * (ra4 + s * (ra5 + s * (ra6 + s * ra7))))));
    S = 1.0 + s * (sa1 + s * (sa2 + s * (sa3 + s * (sa4 + s * (sa5 + s * (sa6 + s * (sa7 + s * sa8)))))));
  } else {
    R = rb0 + s * (rb1 + s * (rb2 + s * (rb3 + s * (rb4 + s * (rb5 + s * rb6)))));
    S = 1.0 + s * (sb1 + s * (sb2 + s * (sb3 + s * (sb4 + s * (sb5 + s * (sb6 + s * sb7))))));
  }
  // z = x with the low 32 bits cleared, so that z*z is exact.
  const z = reinterpret<f64>(reinterpret<u64>(x) & 0xffffffff00000000);
  // Both exponentials in one f64x2 exp.
  const ev = expv(f64x2.replace_lane(f64x2.splat(-z * z - 0.5625), 1, (z - x) * (z + x) + R / S));
  const r = f64x2.extract_lane(ev, 0) * f64x2.extract_lane(ev, 1);
  return r / x;
}

/** P/Q on [0, 0.84375): erf(x) = x + x * y. */
@inline function erfSmallY(z: f64): f64 {
  const r = pp0 + z * (pp1 + z * (pp2 + z * (pp3 + z * pp4)));
  const s = 1.0 + z * (qq1 + z * (qq2 + z * (qq3 + z * (qq4 + z * qq5))));
  return r / s;
}

/** P/Q on [0.84375, 1.25): erf(x) = erx + P/Q with s = x - 1. */
@inline function erfMidPQ(s: f64): f64 {
  const P = pa0 + s * (pa1 + s * (pa2 + s * (pa3 + s * (pa4 + s * (pa5 + s * pa6)))));
  const Q = 1.0 + s * (qa1 + s * (qa2 + s * (qa3 + s * (qa4 + s * (qa5 + s * qa6)))));
  return P / Q;
}

export function erfd(x: f64): f64 {
  if (x != x) return x;
  const ax = abs<f64>(x);
  const neg = x < 0;
  let r: f64;
  if (ax < 0.84375) {
    if (ax < 3.725290298461914e-9) {
      // |x| < 2^-28
      r = ax < 2.848094538889218e-306 ? 0.125 * (8.0 * ax + efx8 * ax) : ax + efx * ax;
    } else {
      r = ax + ax * erfSmallY(ax * ax);
    }
  } else if (ax < 1.25) {
    r = erx + erfMidPQ(ax - 1.0);
  } else if (ax >= 6.0) {
    r = 1.0;
  } else {
    r = 1.0 - erfcTail(ax);
  }
  return neg ? -r : r;
}

export function erfcd(x: f64): f64 {
  if (x != x) return x;
  const ax = abs<f64>(x);
  const neg = x < 0;
  if (ax < 0.84375) {
    if (ax < 1.3877787807814457e-17) return 1.0 - x; // |x| < 2^-56
    const y = erfSmallY(x * x);
    if (x < 0.25) {
      // includes all negative x here
      return 1.0 - (x + x * y);
    }
    return 0.5 - (x * y + (x - 0.5));
  }
  if (ax < 1.25) {
    const pq = erfMidPQ(ax - 1.0);
    return neg ? 1.0 + (erx + pq) : (1.0 - erx) - pq;
  }
  if (ax < 28.0) {
    if (neg && ax > 6.0) return 2.0;
    const t = erfcTail(ax);
    return neg ? 2.0 - t : t;
  }
  return neg ? 2.0 : 0.0;
}
