// Package kubevipenv knows how each generation of kube-vip releases reads its environment
// (generations.go, read from kube-vip's source), and judges the variables a rendered kube-vip
// container sets for the release of its image: a value that release would misread is translated
// where the meaning is certain, and refused otherwise (judge.go).
package kubevipenv
