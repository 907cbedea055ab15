// Package dial connects a Go client to a himga memory server: plaintext, TLS or mutual TLS,
// with or without a bearer token (for a server started with --auth-file).
package dial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Options says how to reach the server. Empty fields are left out: no CA means plaintext.
type Options struct {
	// Token is sent as "authorization: Bearer TOKEN" with every call.
	Token string
	// CA is a PEM file of the CA the server's certificate must come from; set, the
	// connection is TLS.
	CA string
	// Cert and Key are the client's own certificate and key (PEM), for mutual TLS.
	Cert, Key string
}

// AddFlags registers the flags that fill o on fs: -token (default $HIMGA_TOKEN), -tls-ca,
// -tls-cert and -tls-key. Every example that reaches a server takes them from here. The usage
// text never shows the token.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	o.Token = os.Getenv("HIMGA_TOKEN")
	fs.Var(secret{&o.Token}, "token",
		"a bearer `TOKEN`, for a server with an auth file (default: $HIMGA_TOKEN)")
	fs.StringVar(&o.CA, "tls-ca", "", "connect with TLS, trusting this CA (PEM)")
	fs.StringVar(&o.Cert, "tls-cert", "", "mutual TLS: the client's certificate (PEM)")
	fs.StringVar(&o.Key, "tls-key", "", "mutual TLS: the client's key (PEM)")
}

// secret is a string flag whose value -h and flag errors do not print.
type secret struct{ value *string }

func (s secret) String() string { return "" }

func (s secret) Set(value string) error {
	*s.value = value
	return nil
}

// bearer is a per-call credential carrying the token.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: a server on loopback may take tokens in plaintext.
func (b bearer) RequireTransportSecurity() bool { return false }

// DialOptions are the grpc.DialOptions for o.
func (o Options) DialOptions() ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(o.Token)))
	}
	if (o.Cert == "") != (o.Key == "") {
		return nil, fmt.Errorf("a client certificate and its key go together: give both or neither")
	}
	if o.CA == "" {
		if o.Cert != "" {
			return nil, fmt.Errorf("a client certificate needs the server's CA as well")
		}
		return append(opts, grpc.WithTransportCredentials(insecure.NewCredentials())), nil
	}
	pem, err := os.ReadFile(o.CA)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", o.CA)
	}
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if o.Cert != "" {
		pair, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return append(opts, grpc.WithTransportCredentials(credentials.NewTLS(config))), nil
}

// Connect is a client connection to target ("host:port") as o says.
func (o Options) Connect(target string) (*grpc.ClientConn, error) {
	opts, err := o.DialOptions()
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(target, opts...)
}
