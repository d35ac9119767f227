package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-sql-driver/mysql"
)

// seedStarRocks creates database db on the StarRocks cluster (or stand-in)
// of FLIGHTGW_STARROCKS_MYSQL / _USER / _PASSWORD and ingests the table
// sales into it through the gateway at uri, catalog "sr":
//
//	id | region | qty
//	 1 | eu     |  1
//	 2 | us     |  2
//	 3 | eu     |  3
//	 4 | NULL   |  4
func seedStarRocks(ctx context.Context, uri, db string) error {
	conn, err := starRocksSQL()
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE `"+strings.ReplaceAll(db, "`", "``")+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", db, err)
	}
	adb, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: uri})
	if err != nil {
		return err
	}
	defer adb.Close()
	cnxn, err := adb.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"eu", "us", "eu", ""}, []bool{true, true, true, false})
	b.Field(2).(*array.Int32Builder).AppendValues([]int32{1, 2, 3, 4}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: "sales", adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate,
		adbc.OptionValueIngestTargetCatalog: "sr", adbc.OptionValueIngestTargetDBSchema: db} {
		if err := stmt.SetOption(k, v); err != nil {
			return err
		}
	}
	if err := stmt.Bind(ctx, rec); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// dropStarRocks drops database db again.
func dropStarRocks(ctx context.Context, db string) error {
	conn, err := starRocksSQL()
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+strings.ReplaceAll(db, "`", "``")+"`")
	return err
}

func starRocksSQL() (*sql.DB, error) {
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = os.Getenv("FLIGHTGW_STARROCKS_USER"), os.Getenv("FLIGHTGW_STARROCKS_PASSWORD"), "tcp", os.Getenv("FLIGHTGW_STARROCKS_MYSQL")
	if mc.User == "" {
		mc.User = "root"
	}
	c, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}
