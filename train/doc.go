// Package train is gorstar's pipeline (Run, `gorstar train`): the stages in order — data, model
// init, SFT, eval of the SFT model, the RL stages with an eval after each, a summary — each writing
// into one run directory and marking itself done, so a rerun skips finished stages and resumes an
// interrupted one. It also owns what the stages share: the run directory's layout (Layout, the one
// place its paths are spelled), the lock that keeps two processes from writing one run (Lock), the
// record of each stage's equivalent single command (commands.sh, so a stage can be rerun or
// replaced by hand), and the run report (WriteReport: a self-contained report.html with inline SVG
// charts, the eval table and sample trajectories).
package train
