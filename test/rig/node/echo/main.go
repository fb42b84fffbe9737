// Command echo is the backend the end-to-end suite puts behind a LoadBalancer Service in a guest
// cluster: it answers every request with its pod's name, so that a client shows which pod it
// reached and through what.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	name, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", name)
	})
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
