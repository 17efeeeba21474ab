package main

// bench: make bench-cluster's parallel creation (test/bench/cluster.sh). N pods, the
// benchmark's 1-GPU pod (as its kubectl List holds them), created by C workers as fast
// as they go (a closed loop: each worker sends its next pod when the last is answered).
// Each worker is a client of its own, with a connection of its own to kube-apiserver,
// as C controllers or users would be: client-go shares one transport (one HTTP/2
// connection) between clients of the same configuration, so each worker's
// configuration gets a Proxy function, which makes its transport uncacheable
// (k8s.io/client-go transport/cache.go tlsConfigKey). Prints one JSON object: the wall
// time from the first request to the last answer, and the latency of every request as
// the client measured it, its exact p50 and p99 (nearest rank over all the samples).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchResult is what bench prints.
type BenchResult struct {
	Pods       int      `json:"pods"`
	Workers    int      `json:"workers"`
	Errors     int      `json:"errors"`
	FirstError string   `json:"firstError,omitempty"`
	Seconds    float64  `json:"seconds"`
	PodsPerSec float64  `json:"podsPerSec"`
	P50Ms      float64  `json:"p50Ms"`
	P99Ms      float64  `json:"p99Ms"`
	MaxMs      float64  `json:"maxMs"`
	SamplesMs  []string `json:"samplesMs,omitempty"`
}

// benchPod: the pod of test/bench/cluster.sh's List, with the name NAME.
func benchPod(name, scheduler string) *corev1.Pod {
	c := corev1.Container{Name: "c", Image: "registry.example/c:1"}
	c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(1, resource.DecimalSI)}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{c}}}
}

// ownConfig: a client configuration whose transport (and so connection) is its own,
// with no client-side rate limit.
func ownConfig(kubeconfig string) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	rc.RateLimiter = nil
	rc.Timeout = 60 * time.Second
	rc.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	return rc, nil
}

// ownClient: a clientset with a transport (and so a connection) of its own.
func ownClient(kubeconfig string) (*kubernetes.Clientset, error) {
	rc, err := ownConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// fanOut: do(w, i) for i in 0..n-1, by workers 0..workers-1 as fast as they go (a closed
// loop: each sends its next request when the last is answered); every call's error and
// the wall time from the first call to the last return.
func fanOut(n, workers int, do func(w, i int) error) ([]error, float64) {
	errs := make([]error, n)
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range next {
				errs[i] = do(w, i)
			}
		}(w)
	}
	wg.Wait()
	return errs, time.Since(start).Seconds()
}

// countErrors: how many of errs are set, and the first one's text.
func countErrors(errs []error) (int, string) {
	n, first := 0, ""
	for _, err := range errs {
		if err != nil {
			if n == 0 {
				first = err.Error()
			}
			n++
		}
	}
	return n, first
}

// nearestRank: the smallest of the sorted samples with at least p of them at or
// below it (exact: no interpolation). 0 without samples.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func cmdBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	ns := fs.String("ns", "", "namespace of the pods")
	count := fs.Int("count", 300, "pods to create")
	workers := fs.Int("workers", 8, "clients, each with its own connection, one request in flight each")
	prefix := fs.String("prefix", "b-", "the pods' names: PREFIX0, PREFIX1, ...")
	scheduler := fs.String("scheduler", "", "schedulerName of every pod (empty: the default scheduler)")
	samples := fs.Bool("samples", false, "print every latency too")
	fs.Parse(args)
	if *ns == "" || *count <= 0 || *workers <= 0 {
		return errors.New("bench: -ns, a positive -count and -workers are required")
	}
	clients := make([]*kubernetes.Clientset, *workers)
	for i := range clients {
		cs, err := ownClient(*kubeconfig)
		if err != nil {
			return err
		}
		clients[i] = cs
	}
	// Each connection opened (TLS handshake done) before the clock starts.
	for _, cs := range clients {
		if _, err := cs.CoreV1().Pods(*ns).List(context.Background(), metav1.ListOptions{Limit: 1}); err != nil {
			return err
		}
	}
	lat := make([]float64, *count)
	errs, wall := fanOut(*count, *workers, func(w, i int) error {
		p := benchPod(fmt.Sprintf("%s%d", *prefix, i), *scheduler)
		t0 := time.Now()
		_, err := clients[w].CoreV1().Pods(*ns).Create(context.Background(), p, metav1.CreateOptions{})
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
		return err
	})
	res := BenchResult{Pods: *count, Workers: *workers, Seconds: wall, PodsPerSec: float64(*count) / wall}
	res.Errors, res.FirstError = countErrors(errs)
	if *samples {
		for _, v := range lat {
			res.SamplesMs = append(res.SamplesMs, fmt.Sprintf("%.3f", v))
		}
	}
	sort.Float64s(lat)
	res.P50Ms, res.P99Ms, res.MaxMs = nearestRank(lat, 0.50), nearestRank(lat, 0.99), nearestRank(lat, 1)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}
