// Package metrics turns graded samples into the numbers an evaluation reports: average pass@1 over
// k samples per problem (rStar2's headline metric), the unbiased pass@k estimator of Chen et al.
// for every k' ≤ k (PassAtK), majority voting over normalized final answers (MajorityVote), a
// seeded percentile-bootstrap interval over problems (BootstrapMeanCI), and a Summary of
// per-sample results with a per-source breakdown, printed as JSON (the field names of the
// `gorstar eval` contract) or as a Markdown table for people (WriteMarkdown); per-problem pass
// rates and the keep rule of a pass-rate filter (PassRates, PassRate.AtMost).
//
// The package does no sampling and no grading and imports only the standard library: the caller
// (package eval, rl) runs the rollouts, grades them (package reward) and hands over one
// SampleResult per sample, with the extracted answer so that maj@k can vote on it through the
// caller's normalizer (reward.Canonical).
package metrics
