package meal_test

import (
	"os"
	"testing"

	"ndiro/internal/photo"
)

func TestMain(m *testing.M) {
	photo.MaybeHEICWorker()
	os.Exit(m.Run())
}
