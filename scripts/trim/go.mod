// The tool the builds of upstream programs the tests run (scripts/build-externaldns,
// scripts/build-traefik) cut those programs down with; the standard library only.
module github.com/kubefip/kube-fip-operator/scripts/trim

go 1.26.6
