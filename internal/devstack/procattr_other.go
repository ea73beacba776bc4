//go:build !linux

package devstack

import "syscall"

// childAttr starts a child in its own process group (see the Linux
// version; other systems have no parent-death signal).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
