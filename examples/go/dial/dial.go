// Package dial connects a Go client to a himga memory server: plaintext, TLS or mutual TLS,
// with or without a bearer token (for a server started with --auth-file).
package dial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
