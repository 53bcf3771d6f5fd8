// statistics.cpp: t-intervals, Welch and paired t-tests, Holm's correction (headlab/report/statistics.hpp).
#include "headlab/report/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <string>

#include <boost/math/distributions/students_t.hpp>

#include "headlab/core/errors.hpp"

namespace headlab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_sample(const std::vector<double>& x, std::size_t at_least, const char* what) {
  if (x.size() < at_least)
    throw ValueError(std::string(what) + ": a sample of " + std::to_string(x.size()) + " values; at least " +
                     std::to_string(at_least) + " needed");
  for (double v : x)
    if (!std::isfinite(v)) throw ValueError(std::string(what) + ": a value is not finite");
}

double mean_of(const std::vector<double>& x) {
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / double(x.size());
  if (std::isfinite(mean) || x.empty()) return mean;
  // A sum past the largest double (values near 1e308): the sum of x_i / n, finite for finite x.
  double scaled = 0;
  for (double v : x) scaled += v / double(x.size());
  return scaled;
}

// sum (x - mean)^2 / (n - 1), two passes.
double variance_of(const std::vector<double>& x, double mean) {
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return ss / double(x.size() - 1);
}

// 0 when the largest |value| of the samples lies in [2^-100, 2^100], else the k that brings it to
// [1, 2) times 2^k. Welch's df squares the variances (fourth powers of the values): beyond 2^+-100
// they under- or overflow (near 1e-170 the spread read as 0: t = inf, p = 0; near 1e80 df read
// NaN). t, df and p do not depend on the scale, so the samples are multiplied by 2^k (exactly,
// subnormal values too: ldexp) and the means, spreads and intervals by 2^-k after.
int safe_exponent(std::initializer_list<const std::vector<double>*> samples) {
  double largest = 0;
  for (const std::vector<double>* x : samples)
    for (double v : *x) largest = std::max(largest, std::fabs(v));
  if (largest == 0 || (largest >= 0x1p-100 && largest <= 0x1p100)) return 0;
  return -std::ilogb(largest);
}

std::vector<double> scaled(const std::vector<double>& x, int k) {
  std::vector<double> out(x);
  for (double& v : out) v = std::ldexp(v, k);
  return out;
}

// r with its difference and interval multiplied by 2^-k (t, df and p unchanged).
MeanDifference unscaled(MeanDifference r, int k) {
  r.difference = std::ldexp(r.difference, -k), r.ci_low = std::ldexp(r.ci_low, -k), r.ci_high = std::ldexp(r.ci_high, -k);
  return r;
}

// The interval and p of a difference with standard error se on df degrees of freedom.
MeanDifference t_test(double difference, double se, double df) {
  MeanDifference r;
  r.difference = difference;
  r.df = df;
  if (se == 0) {  // both samples constant
    r.t = difference == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), difference);
    r.p = difference == 0 ? 1.0 : 0.0;
    r.ci_low = r.ci_high = difference;
    return r;
  }
  r.t = difference / se;
  r.p = student_t_two_sided_p(r.t, df);
  const double half = student_t_quantile(0.975, df) * se;
  r.ci_low = difference - half;
  r.ci_high = difference + half;
  return r;
}

}  // namespace

double student_t_quantile(double probability, double df) {
  if (!(probability > 0 && probability < 1) || !(df > 0))
    throw ValueError("student_t_quantile: probability in (0, 1) and df > 0 needed");
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), probability);
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0) || std::isnan(t)) throw ValueError("student_t_two_sided_p: df > 0 and a t that is a number needed");
  if (std::isinf(t)) return 0.0;
  const boost::math::students_t_distribution<double> dist(df);
  return std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(t))));
}

SampleSummary summarize(const std::vector<double>& x) {
  check_sample(x, 1, "summarize");
  if (const int k = safe_exponent({&x}); k != 0) {
    SampleSummary s = summarize(scaled(x, k));
    s.mean = std::ldexp(s.mean, -k), s.sd = std::ldexp(s.sd, -k);
    s.ci_low = std::ldexp(s.ci_low, -k), s.ci_high = std::ldexp(s.ci_high, -k);
    return s;
  }
  SampleSummary s;
  s.n = x.size();
  s.mean = mean_of(x);
  if (s.n < 2) {
    s.sd = s.ci_low = s.ci_high = kNaN;
    return s;
  }
  s.sd = std::sqrt(variance_of(x, s.mean));
  const double half = student_t_quantile(0.975, double(s.n - 1)) * s.sd / std::sqrt(double(s.n));
  s.ci_low = s.mean - half;
  s.ci_high = s.mean + half;
  return s;
}

MeanDifference welch_test(const std::vector<double>& a, const std::vector<double>& b) {
  check_sample(a, 2, "welch_test");
  check_sample(b, 2, "welch_test");
  if (const int k = safe_exponent({&a, &b}); k != 0) return unscaled(welch_test(scaled(a, k), scaled(b, k)), k);
  const double ma = mean_of(a), mb = mean_of(b);
  const double va = variance_of(a, ma) / double(a.size()), vb = variance_of(b, mb) / double(b.size());
  const double se = std::sqrt(va + vb);
  const double df = se == 0 ? double(a.size() + b.size() - 2)
                            : (va + vb) * (va + vb) / (va * va / double(a.size() - 1) + vb * vb / double(b.size() - 1));
  return t_test(ma - mb, se, df);
}

MeanDifference paired_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw ValueError("paired_test: " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                     " values; a pair needs one of each");
  check_sample(a, 2, "paired_test");
  check_sample(b, 2, "paired_test");
  // Scaled before the differences: 1e308 - (-1e308) would overflow.
  if (const int k = safe_exponent({&a, &b}); k != 0) return unscaled(paired_test(scaled(a, k), scaled(b, k)), k);
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  const double md = mean_of(d);
  return t_test(md, std::sqrt(variance_of(d, md) / double(d.size())), double(d.size() - 1));
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  for (double v : p)
    if (!(v >= 0 && v <= 1)) throw ValueError("holm_adjust: a p-value outside [0, 1]");
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return p[i] < p[j]; });
  std::vector<double> adjusted(p.size());
  double running = 0;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    running = std::max(running, std::min(1.0, double(p.size() - rank) * p[order[rank]]));
    adjusted[order[rank]] = running;
  }
  return adjusted;
}

}  // namespace headlab
