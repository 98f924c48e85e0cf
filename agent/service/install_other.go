//go:build !linux && !darwin && !windows

package service

import (
	"context"
	"io"
)

// Path is where Install writes s's definition: nowhere here.
func Path(*Spec) (string, error) { return "", ErrUnsupported }

// Install is unsupported on this platform.
func Install(context.Context, *Spec, io.Writer) error { return ErrUnsupported }

// Uninstall is unsupported on this platform.
func Uninstall(context.Context, string, io.Writer) error { return ErrUnsupported }

// RunAsService reports false.
func RunAsService(func(context.Context) error) (bool, error) { return false, nil }
