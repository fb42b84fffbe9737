package rig

import (
	"strings"
	"sync"
)

// LastLines returns the last n lines of s, the end of a process's output for a failure message.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Parallel runs fn for every item on a few goroutines and returns the first error.
func Parallel(items []string, fn func(string) error) error {
	work := make(chan string)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				if err := fn(item); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, item := range items {
		work <- item
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}
