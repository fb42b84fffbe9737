package controlplane

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// PreviousRelease is the commit of the last release that named FloatingIPAllocations by the bare
// address. Upgrade tests start from it: they run this release against an API server, then the
// operator being tested on the same API server, and check that nothing was lost.
const PreviousRelease = "3d0cbcd3e07531976eebd1112840d290a338ee23"

// cacheEnv overrides where slow builds are kept, as it does for the scripts.
const cacheEnv = "KUBE_FIP_CACHE"

// CacheDir is the directory outside the repository where slow builds are kept from one run to the
// next: KUBE_FIP_CACHE when set, otherwise ${XDG_CACHE_HOME:-$HOME/.cache}/kube-fip-operator, the
// same place scripts/lib/build-tools.sh uses for the control plane and the data plane.
func CacheDir() (string, error) {
	if dir := os.Getenv(cacheEnv); dir != "" {
		return dir, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the cache directory (set %s or XDG_CACHE_HOME): %w", cacheEnv, err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "kube-fip-operator"), nil
}

// BuildRelease builds the operator binary as it was at commit of this repository's history and
// returns its path. The binary is built once, from `git archive` of the commit with the Go module
// proxy as usual, and kept under <CacheDir>/releases/<full commit hash>/, so later calls return at
// once. The build's progress goes to stderr. A commit missing from the history, as in a shallow
// clone, is an error that says how to fetch it.
func BuildRelease(commit string) (string, error) {
	root, full, err := repoCommit(commit)
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "releases", full)
	binary := filepath.Join(dir, "kube-fip-operator")
	if info, err := os.Stat(binary); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o100 != 0 {
		return binary, nil
	}

	short := full[:12]
	logf("building the operator at %s (once; cached in %s)", short, dir)
	start := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp("", "kube-fip-operator-"+short+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	if err := exportCommit(root, full, src); err != nil {
		return "", err
	}

	// Built beside its final place and renamed there, so that a binary in the cache is always
	// whole, even when two test processes build the same release at once.
	tmp, err := os.CreateTemp(dir, ".kube-fip-operator-*")
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	defer os.Remove(tmp.Name())

	stop := heartbeat("the operator at "+short, start)
	// The version is linked in as scripts/build does for an untagged commit, so that the release's
	// log lines say which release it is.
	ldflags := "-s -w -X github.com/kubefip/kube-fip-operator/pkg/version.Version=" + short +
		" -X github.com/kubefip/kube-fip-operator/pkg/version.GitCommit=" + short
	// The exported tree is a module of its own: no workspace above the temporary directory may
	// take part in the build.
	err = rig.GoBuild(src, ".", tmp.Name(), ldflags, "GOWORK=off")
	stop()
	if err != nil {
		return "", fmt.Errorf("the operator at %s: %w", short, err)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), binary); err != nil {
		return "", err
	}
	logf("built the operator at %s in %s: %s", short, time.Since(start).Round(time.Second), binary)
	return binary, nil
}

// repoCommit returns this repository's root and the full hash of commit in it, or an error that
// says how to get the commit when the history does not have it.
func repoCommit(commit string) (root, full string, err error) {
	if root, err = rig.RepoRoot(); err != nil {
		return "", "", err
	}
	full, err = resolveCommit(root, commit)
	return root, full, err
}

// resolveCommit returns the full hash of commit in the repository at root, or an error that says
// how to get it when the history does not have it.
func resolveCommit(root, commit string) (string, error) {
	if commit == "" {
		return "", errors.New("no commit to build the operator at")
	}
	out, err := git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", commit+"^{commit}")
	if err == nil {
		return strings.TrimSpace(out), nil
	}
	shallow, serr := git(root, "rev-parse", "--is-shallow-repository")
	if serr != nil {
		return "", fmt.Errorf("cannot look up commit %s: %s is not a git repository or git does not run there: %w",
			commit, root, serr)
	}
	if strings.TrimSpace(shallow) == "true" {
		return "", fmt.Errorf("commit %s is not in the history of %s, a shallow clone: fetch the whole history with "+
			"`git fetch --unshallow` and run again", commit, root)
	}
	return "", fmt.Errorf("commit %s is not in the history of %s: fetch it (`git fetch origin %s`, or "+
		"`git fetch --unshallow` in a shallow clone) and run again", commit, root, commit)
}

// exportCommit writes the files of commit into dir, as `git archive` gives them.
func exportCommit(root, commit, dir string) error {
	cmd := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive %s: %w", commit, err)
	}
	extractErr := extractTar(stdout, dir)
	if extractErr != nil {
		// Let git finish writing, whatever it still had to say.
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	if waitErr != nil {
		return fmt.Errorf("git archive %s: %w\n%s", commit, waitErr, stderr.Bytes())
	}
	if extractErr != nil {
		return fmt.Errorf("extracting git archive %s: %w", commit, extractErr)
	}
	return nil
}

// extractTar writes the directories, files and symbolic links of a tar stream into dir. Every name
// must stay inside dir.
func extractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // git's record of the commit, not a file
		}
		name := filepath.FromSlash(strings.TrimSuffix(hdr.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%q is outside the archive's directory", hdr.Name)
		}
		path := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, hdr.FileInfo().Mode().Perm())
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, path); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%q: unexpected entry type %q", hdr.Name, hdr.Typeflag)
		}
	}
}

// git runs git in the repository at root and returns what it printed.
func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return string(out), nil
}

// logf prints a progress line of a slow build to stderr, where the build scripts print theirs.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "release: "+format+"\n", args...)
}

// heartbeat keeps a long, quiet build visibly alive, as the build scripts do; the function it
// returns stops it.
func heartbeat(what string, start time.Time) func() {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				logf("still building %s (%s)", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}
