// Package train is gorstar's pipeline: the stages in order (data → SFT → eval → RL stages with an
// eval after each → summary), each writing into one run directory. This file group owns what the
// stages share: the run directory's layout (Layout, the one place its paths are spelled), the lock
// that keeps two processes from writing one run (Lock), the record of each stage's equivalent
// single command (commands.sh, so a stage can be rerun or replaced by hand), and the run report
// (WriteReport: a self-contained report.html with inline SVG charts, the eval table and sample
// trajectories).
package train
