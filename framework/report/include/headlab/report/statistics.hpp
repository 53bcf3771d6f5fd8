// headlab/report/statistics.hpp: what a study needs to say whether two cells differ.
//
// For a sample x_1..x_n (n >= 2):
//   mean  = (1/n) sum x_i        sd = sqrt( sum (x_i - mean)^2 / (n - 1) )
//   95% t-interval of the mean:  mean ± t_{0.975, n-1} sd / sqrt(n)
// Welch's test of mean(a) - mean(b) (unequal variances):
//   se = sqrt(s_a^2 / n_a + s_b^2 / n_b)      t = (mean_a - mean_b) / se
//   df = se^4 / ( (s_a^2/n_a)^2 / (n_a - 1) + (s_b^2/n_b)^2 / (n_b - 1) )   (Welch-Satterthwaite)
//   p  = 2 P(T_df > |t|)                     95% CI: difference ± t_{0.975, df} se
// The paired test (the same seeds in both cells): the one-sample t-test of d_i = a_i - b_i, df n - 1.
// Holm's correction of m p-values: sort ascending, p_(k) -> max over j <= k of min(1, (m - j + 1) p_(j)).
// Student's t quantiles and tail probabilities come from Boost.Math (students_t), not a hand-written
// incomplete beta function. Fixtures: tests/fixtures/make_statistics_fixtures.py (SciPy).
#pragma once

#include <cstddef>
#include <vector>

namespace headlab {

// Student's t distribution with df > 0 degrees of freedom (df need not be whole).
double student_t_quantile(double probability, double df);  // P(T <= q) = probability, probability in (0, 1)
double student_t_two_sided_p(double t, double df);          // 2 P(T > |t|)

struct SampleSummary {
  std::size_t n = 0;
  double mean = 0, sd = 0;        // sd NaN when n < 2
  double ci_low = 0, ci_high = 0;  // the 95% t-interval; NaN when n < 2 (the sd and an end are inf
                                   // where they pass 1.8e308)
};
// ValueError for an empty sample or a value that is not finite.
SampleSummary summarize(const std::vector<double>& values);

struct MeanDifference {
  double difference = 0;           // mean(a) - mean(b)
  double ci_low = 0, ci_high = 0;  // its 95% interval
  double t = 0, df = 0, p = 0;     // the statistic, its degrees of freedom and the two-sided p
};
// ValueError when a sample has fewer than 2 values or one is not finite; both samples constant and
// equal give t = 0, p = 1; constant but different, |t| = infinity, p = 0. Values far from 1 (beyond
// 2^+-100, where Welch's df, of fourth powers, would under- or overflow) are tested scaled by a
// power of two: t, df and p are those of any other scale, the difference and its interval are
// scaled back (an end past 1.8e308 is inf).
MeanDifference welch_test(const std::vector<double>& a, const std::vector<double>& b);
// a[i] and b[i] are a pair (the same seed): ValueError when the sizes differ or n < 2.
MeanDifference paired_test(const std::vector<double>& a, const std::vector<double>& b);

// Holm-adjusted p-values, in the order given (ValueError for a p outside [0, 1]).
std::vector<double> holm_adjust(const std::vector<double>& p);

}  // namespace headlab
