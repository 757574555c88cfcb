// Package eval runs an evaluation: k samples per problem rolled out with the Python tool on a
// native model or OpenAI-compatible endpoints (Run), graded strictly and under rStar2's grading,
// written as resumable per-sample results with a manifest, and summarized by package eval/metrics
// (average pass@1 over k samples, pass@k, maj@k). Rater measures per-problem pass rates with the
// same sampling, for `gorstar data filter --max-pass-rate`.
package eval
