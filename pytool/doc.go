// Package pytool is gorstar's Python tool environment: a pool of warm, sandboxed Python workers
// that run the model's tool calls under rStar2's harness semantics.
//
// Each worker is a "zygote": a Python process started inside bubblewrap (new pid, net, ipc and uts
// namespaces, read-only system, private /tmp, no home or project directories) that imports the
// allowed modules once and forks one child per call. As root, every child drops to its own
// unprivileged uid and gets rlimits (address space, CPU time, processes, file size); Go owns the
// wall clock and has the zygote kill every process of a call that runs past it. Sessions keep a
// live interpreter per trajectory. The same Runner interface is served by a local Pool, by
// `gorstar exec serve` (Server) and by a Client that spreads calls over several servers.
//
// The pool takes Options, whose fields are the `exec.*` configuration keys; pytool never imports
// the configuration (internal/tooloptions converts it).
package pytool
