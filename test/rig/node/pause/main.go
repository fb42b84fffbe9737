// Command pause is the sandbox image's program for the test clusters: it holds a pod's namespaces
// open until it is told to stop, as registry.k8s.io/pause does, built here since no registry can
// be reached.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	// As the first process of a shared PID namespace it would reap orphans; SIGCHLD is handled by
	// the runtime's default of ignoring it, which lets the kernel reap them.
	signal.Ignore(syscall.SIGCHLD)
	<-stop
}
