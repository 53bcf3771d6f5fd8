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

// 1 when the largest |value| of the samples lies in [2^-300, 2^300], else the power of two 2^k that
// brings it to [1, 2). Squared deviations of values near 1e-170 underflow to 0 (a spread read as
// none: t = inf, p = 0), near 1e308 they overflow; t, df and p do not depend on the scale, so the
// samples are multiplied by it (exactly: a power of two) and means and intervals divided after.
double safe_scale(std::initializer_list<const std::vector<double>*> samples) {
  double largest = 0;
  for (const std::vector<double>* x : samples)
    for (double v : *x) largest = std::max(largest, std::fabs(v));
  if (largest == 0 || (largest >= 0x1p-300 && largest <= 0x1p300)) return 1;
  return std::ldexp(1.0, -std::ilogb(largest));
}

std::vector<double> times(const std::vector<double>& x, double scale) {
  std::vector<double> out(x);
  for (double& v : out) v *= scale;
  return out;
}

// r with its difference and interval divided by scale (t, df and p unchanged).
MeanDifference unscaled(MeanDifference r, double scale) {
  r.difference /= scale, r.ci_low /= scale, r.ci_high /= scale;
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
  if (const double scale = safe_scale({&x}); scale != 1) {
    SampleSummary s = summarize(times(x, scale));
    s.mean /= scale, s.sd /= scale, s.ci_low /= scale, s.ci_high /= scale;
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
  if (const double scale = safe_scale({&a, &b}); scale != 1)
    return unscaled(welch_test(times(a, scale), times(b, scale)), scale);
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
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  if (const double scale = safe_scale({&d}); scale != 1) {
    const std::vector<double> ds = times(d, scale), zeros(d.size(), 0.0);
    return unscaled(paired_test(ds, zeros), scale);
  }
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
