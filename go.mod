module github.com/kubefip/kube-fip-operator

go 1.22.0

require (
	github.com/go-logr/logr v1.4.2
	github.com/prometheus/client_golang v1.19.1
	github.com/rancher/lasso v0.0.0-20240430201833-6f3def65ffc5
	github.com/rancher/rancher/pkg/apis v0.0.0-20240618122559-b9ec494d4f6f
	github.com/rancher/wrangler/v2 v2.2.0-rc6
	github.com/sirupsen/logrus v1.9.3
	go4.org/netipx v0.0.0-20231129151722-fdeea329fbba
	golang.org/x/tools v0.26.0
	helm.sh/helm/v3 v3.15.4
	k8s.io/api v0.30.14
	k8s.io/apiextensions-apiserver v0.30.3
	k8s.io/apimachinery v0.30.14
	k8s.io/client-go v12.0.0+incompatible
	sigs.k8s.io/controller-runtime v0.18.7
	sigs.k8s.io/yaml v1.4.0
)

require (
	github.com/Masterminds/semver/v3 v3.2.1 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/cyphar/filepath-securejoin v0.2.4 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.11.0 // indirect
	github.com/evanphx/json-patch v5.7.0+incompatible // indirect
	github.com/evanphx/json-patch/v5 v5.9.0 // indirect
	github.com/ghodss/yaml v1.0.0 // indirect
	github.com/go-openapi/jsonpointer v0.19.6 // indirect
	github.com/go-openapi/jsonreference v0.20.2 // indirect
	github.com/go-openapi/swag v0.22.3 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/groupcache v0.0.0-20210331224755-41bb18bfe9da // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/gnostic-models v0.6.8 // indirect
	github.com/google/go-cmp v0.6.0 // indirect
	github.com/google/gofuzz v1.2.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/imdario/mergo v0.3.16 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/client_model v0.5.0 // indirect
	github.com/prometheus/common v0.48.0 // indirect
	github.com/prometheus/procfs v0.12.0 // indirect
	github.com/rancher/aks-operator v1.9.0-rc.6 // indirect
	github.com/rancher/eks-operator v1.9.0-rc.5 // indirect
	github.com/rancher/fleet/pkg/apis v0.10.0-rc.16 // indirect
	github.com/rancher/gke-operator v1.9.0-rc.4 // indirect
	github.com/rancher/norman v0.0.0-20240604183301-20cd23aadce1 // indirect
	github.com/rancher/rke v1.6.0-rc6 // indirect
	github.com/rancher/wrangler/v3 v3.0.0-rc2 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	github.com/xeipuuv/gojsonpointer v0.0.0-20190905194746-02993c407bfb // indirect
	github.com/xeipuuv/gojsonreference v0.0.0-20180127040603-bd5ef7bd5415 // indirect
	github.com/xeipuuv/gojsonschema v1.2.0 // indirect
	golang.org/x/mod v0.21.0 // indirect
	golang.org/x/net v0.30.0 // indirect
	golang.org/x/oauth2 v0.21.0 // indirect
	golang.org/x/sync v0.8.0 // indirect
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/term v0.25.0 // indirect
	golang.org/x/text v0.19.0 // indirect
	golang.org/x/time v0.5.0 // indirect
	google.golang.org/protobuf v1.33.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/apiserver v0.30.14 // indirect
	k8s.io/code-generator v0.30.14 // indirect
	k8s.io/component-base v0.30.14 // indirect
	k8s.io/gengo v0.0.0-20240310015720-9cff6334dab4 // indirect
	k8s.io/klog/v2 v2.120.1 // indirect
	k8s.io/kube-openapi v0.0.0-20240228011516-70dd3763d340 // indirect
	k8s.io/kubernetes v1.30.1 // indirect
	k8s.io/utils v0.0.0-20230726121419-3b25d923346b // indirect
	sigs.k8s.io/cli-utils v0.35.0 // indirect
	sigs.k8s.io/cluster-api v1.6.4 // indirect
	sigs.k8s.io/json v0.0.0-20221116044647-bc3834ca7abd // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.4.1 // indirect
)

replace (
	github.com/rancher/aks-operator => github.com/rancher/aks-operator v1.9.0
	github.com/rancher/eks-operator => github.com/rancher/eks-operator v1.9.0
	github.com/rancher/gke-operator => github.com/rancher/gke-operator v1.9.0
	github.com/rancher/rke => github.com/rancher/rke v1.6.0
	k8s.io/api => k8s.io/api v0.30.14
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.30.14
	k8s.io/apimachinery => k8s.io/apimachinery v0.30.14
	k8s.io/apiserver => k8s.io/apiserver v0.30.14
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.30.14
	k8s.io/client-go => k8s.io/client-go v0.30.14
	k8s.io/code-generator => k8s.io/code-generator v0.29.4
	k8s.io/component-base => k8s.io/component-base v0.30.14
	k8s.io/kubectl => k8s.io/kubectl v0.30.14
)
