package integration

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func kubernetesCodecs() runtime.NegotiatedSerializer {
	return serializer.NewCodecFactory(clientgoscheme.Scheme).WithoutConversion()
}
