// Command webhook is the Go baseline of make bench-cluster (test/bench/cluster.sh): a
// mutating admission webhook as a Go team would write one, net/http, crypto/tls and
// encoding/json into structs, nothing else.
//
//	webhook -mode trivial -cert FILE -key FILE -addr IP:PORT
//	webhook -mode policy  -cert FILE -key FILE -addr IP:PORT
//
// trivial: every review allowed with its uid, no patch (the transport's floor).
// policy: the answer gpu-admission's default policy gives the benchmark's pods: a pod
// that asks for nvidia.com/gpu gets the toleration sku=gpu:NoSchedule and the node
// selector kubernetes.azure.com/accelerator=nvidia as a JSONPatch (the patch
// `gpu-admission review` prints for that pod: the default policy does not pin a
// pool); any other pod is allowed unchanged. It is that benchmark's policy, not
// gpu-admission's: no refusal, no pools, no other GPU resource.
//
// HTTP/1.1 only unless -http2, as gpu-admission serves (libmicrohttpd), so that the
// two differ by the server and not by the protocol kube-apiserver speaks to them.
// GET /readyz answers 200.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"
)

type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

type request struct {
	UID    string          `json:"uid"`
	Object json.RawMessage `json:"object"`
}

type response struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     []byte `json:"patch,omitempty"` // base64 by encoding/json, as the API expects
}

type pod struct {
	Spec struct {
		Containers     []container       `json:"containers"`
		InitContainers []container       `json:"initContainers"`
		Tolerations    []json.RawMessage `json:"tolerations"`
		NodeSelector   map[string]string `json:"nodeSelector"`
	} `json:"spec"`
}

type container struct {
	Resources struct {
		Limits   map[string]string `json:"limits"`
		Requests map[string]string `json:"requests"`
	} `json:"resources"`
}

type toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
	Effect   string `json:"effect"`
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

const (
	gpuResource = "nvidia.com/gpu"
	selectorKey = "kubernetes.azure.com/accelerator"
	maxBody     = 3 << 20
)

var gpuToleration = toleration{Key: "sku", Operator: "Equal", Value: "gpu", Effect: "NoSchedule"}

func wantsGPU(cs []container) bool {
	for _, c := range cs {
		if _, ok := c.Resources.Limits[gpuResource]; ok {
			return true
		}
		if _, ok := c.Resources.Requests[gpuResource]; ok {
			return true
		}
	}
	return false
}

// patchFor: the JSONPatch for a GPU pod, nil for any other.
func patchFor(p *pod) ([]byte, error) {
	if !wantsGPU(p.Spec.Containers) && !wantsGPU(p.Spec.InitContainers) {
		return nil, nil
	}
	var ops []patchOp
	if p.Spec.Tolerations == nil {
		ops = append(ops, patchOp{"add", "/spec/tolerations", []toleration{gpuToleration}})
	} else {
		ops = append(ops, patchOp{"add", "/spec/tolerations/-", gpuToleration})
	}
	if p.Spec.NodeSelector == nil {
		ops = append(ops, patchOp{"add", "/spec/nodeSelector", map[string]string{selectorKey: "nvidia"}})
	} else if _, ok := p.Spec.NodeSelector[selectorKey]; !ok {
		ops = append(ops, patchOp{"add", "/spec/nodeSelector/kubernetes.azure.com~1accelerator", "nvidia"})
	}
	return json.Marshal(ops)
}

// protos: the protocols requests came over, each logged once, so that the benchmark can
// say which one kube-apiserver chose (HTTP/2 when offered: client-go's transport
// configures it, k8s.io/apimachinery pkg/util/net SetTransportDefaults).
var protos sync.Map

func handler(policy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, seen := protos.LoadOrStore(r.Proto, true); !seen {
			log.Printf("webhook: first request over %s", r.Proto)
		}
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var in review
		if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := &response{UID: in.Request.UID, Allowed: true}
		if policy {
			var p pod
			if err := json.Unmarshal(in.Request.Object, &p); err != nil {
				http.Error(w, "object: "+err.Error(), http.StatusBadRequest)
				return
			}
			patch, err := patchFor(&p)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if patch != nil {
				resp.PatchType, resp.Patch = "JSONPatch", patch
			}
		}
		out, err := json.Marshal(review{APIVersion: in.APIVersion, Kind: in.Kind, Response: resp})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}
}

func main() {
	mode := flag.String("mode", "trivial", "trivial | policy")
	cert := flag.String("cert", "", "serving certificate (PEM)")
	key := flag.String("key", "", "its key (PEM)")
	addr := flag.String("addr", ":8443", "listen address")
	h2 := flag.Bool("http2", false, "offer HTTP/2 (ALPN h2) as well as HTTP/1.1")
	flag.Parse()
	if *mode != "trivial" && *mode != "policy" {
		fmt.Fprintln(os.Stderr, "webhook: -mode trivial|policy")
		os.Exit(2)
	}
	if *cert == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "webhook: -cert and -key are required")
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	h := handler(*mode == "policy")
	mux.HandleFunc("/mutate", h)
	mux.HandleFunc("/", h)
	srv := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if !*h2 {
		// A non-nil empty map: net/http then never configures HTTP/2.
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	log.Printf("webhook: %s on %s (HTTP/2 %v)", *mode, *addr, *h2)
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
