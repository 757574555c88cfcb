package pytool

import "syscall"

// zygoteProcAttr: a session of its own (also a process group: kill ends it whole), so no
// controlling terminal for a call to reach and one autogroup for the sandbox (zygote.py
// lower_autogroup); killed with gorstar.
func zygoteProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
