package node

import (
	"os"
	"path/filepath"
	"strings"
)

// hostSysctls are the host's settings a kubelet changes while it runs (it sets them for its node,
// and the host is every cluster's node's kernel).
func hostSysctls() []string {
	return []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}
}

// SaveSysctls records the host settings the kubelets change and returns what puts them back: call
// it once before the first cluster starts and restore after the last one stopped.
func SaveSysctls() (restore func()) {
	saved := map[string]string{}
	for _, key := range hostSysctls() {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			saved[key] = strings.TrimSpace(string(v))
		}
	}
	return func() {
		for key, v := range saved {
			_ = os.WriteFile(filepath.Join("/proc/sys", key), []byte(v+"\n"), 0o644)
		}
	}
}
