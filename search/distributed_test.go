package search

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// postgresURL is the throwaway server of scripts/postgres.sh. Without it the test is
// skipped, except under CI, where a missing server is a failure.
func postgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("FRONTIER_TEST_POSTGRES")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FRONTIER_TEST_POSTGRES is not set: run eval \"$(scripts/postgres.sh start)\" first")
		}
		t.Skip("FRONTIER_TEST_POSTGRES is not set; scripts/postgres.sh starts a server")
	}
	return u
}

// freshDatabase creates an empty database on the server and returns its URL.
func freshDatabase(t *testing.T, server string) string {
	t.Helper()
	db, err := gorm.Open(postgres.Open(server), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	name := fmt.Sprintf("frontier_test_%d", time.Now().UnixNano())
	if err := db.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func TestDistributedWorkersOnPostgreSQLMeetTheBudgetExactly(t *testing.T) {
	t.Parallel()
	dbURL := freshDatabase(t, postgresURL(t))
	const budget = 24
	p := loadPlan(t, "estimate.hcl")
	sums := startWorkers(t, 3, workerSpec{Plan: filepath.Join("testdata", "estimate.hcl"), Storage: dbURL, Trials: budget})
	checkExactBudget(t, p, dbURL, budget, sums)
	for i, s := range sums {
		if s.Measured == 0 {
			t.Logf("worker %d measured no trial (the others were faster)", i)
		}
	}
}

func TestTwoProcessesOnOneSQLiteStudyShareTheBudget(t *testing.T) {
	t.Parallel()
	dbURL := filepath.Join(t.TempDir(), "shared.db")
	const budget = 16
	p := loadPlan(t, "estimate.hcl")
	sums := startWorkers(t, 2, workerSpec{Plan: filepath.Join("testdata", "estimate.hcl"), Storage: dbURL, Trials: budget})
	checkExactBudget(t, p, dbURL, budget, sums)
}
