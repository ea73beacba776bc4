package devstack

import "syscall"

// childAttr is how every child of the stack starts: in its own process
// group (a Ctrl-C in the terminal reaches the stack only, which stops its
// children in order), and killed by the kernel if the stack itself dies
// (kill -9 of make run, a crashed test binary), so no Temporal or MinIO
// server outlives it holding ports and data.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
