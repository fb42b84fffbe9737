// Command codegen is the `go generate` driver: it runs wrangler's controller-gen for the kubefip API
// and for the Rancher types the operator watches, then writes the CRD YAML of the kubefip kinds into
// the CRD chart, ClassOf's switch and the tables of the documentation and the chart that have one
// source in the code (docs.go). Run it from the repository root
// (main.go carries the go:generate line).
package main

import (
	"os"
	"os/exec"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	controllergen "github.com/rancher/wrangler/v2/pkg/controller-gen"
	"github.com/rancher/wrangler/v2/pkg/controller-gen/args"
	"github.com/sirupsen/logrus"

	"github.com/kubefip/kube-fip-operator/pkg/crds"
)

func main() {
	// controller-gen reads the boilerplate and the type directories relative to the working directory.
	os.Unsetenv("GOPATH")

	// The CRD descriptions come from the SwaggerDoc methods compiled into this program. When the
	// doc comments changed, those are stale: generate again with the new methods.
	changed, err := crds.WriteSwaggerDocs("pkg/apis/kubefip.k8s.binbash.org/v1", "pkg/codegen/boilerplate.go.txt")
	if err != nil {
		logrus.Fatalf("writing the API documentation: %v", err)
	}
	if changed {
		cmd := exec.Command("go", "run", "./pkg/codegen")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			logrus.Fatalf("generating with the new API documentation: %v", err)
		}
		return
	}

	controllergen.Run(args.Options{
		OutputPackage: "github.com/kubefip/kube-fip-operator/pkg/generated",
		Boilerplate:   "pkg/codegen/boilerplate.go.txt",
		Groups: map[string]args.Group{
			"kubefip.k8s.binbash.org": {
				Types:         []interface{}{"./pkg/apis/kubefip.k8s.binbash.org/v1"},
				GenerateTypes: true,
			},
			// Rancher's own types: controllers only, the types come from rancher/pkg/apis.
			"provisioning.cattle.io": {
				Types:       []interface{}{provv1.Cluster{}},
				PackageName: "provisioning.cattle.io",
			},
			"management.cattle.io": {
				Types:       []interface{}{mgmtv3.Cluster{}},
				PackageName: "management.cattle.io",
			},
		},
	})

	if err := crds.WriteFiles("charts/kube-fip-operator-crd/templates"); err != nil {
		logrus.Fatalf("writing CRD YAML: %v", err)
	}
	// The tables of the documentation and the chart that have one source in the code.
	boilerplate, err := os.ReadFile("pkg/codegen/boilerplate.go.txt")
	if err != nil {
		logrus.Fatal(err)
	}
	classes, err := reasonClasses(boilerplate)
	if err != nil {
		logrus.Fatalf("writing the reasons' classes: %v", err)
	}
	if err := os.WriteFile("pkg/apis/kubefip.k8s.binbash.org/v1/zz_generated_reason_classes.go", classes, 0o644); err != nil {
		logrus.Fatal(err)
	}
	for _, s := range sections() {
		if err := writeSection(s); err != nil {
			logrus.Fatalf("writing the %s: %v", s.name, err)
		}
	}
	if err := writeConfigSchema("charts/kube-fip-operator/values.schema.json"); err != nil {
		logrus.Fatalf("writing the schema of the options: %v", err)
	}
}
