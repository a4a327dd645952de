package broker

// How fault injection reads requests and writes error answers for any
// Kafka API without one function per API: kmsg's requests and responses
// share a shape (a response's topics and partitions mirror the request's,
// under the same field names), so both are walked by reflection. Only
// used while a fault fires.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicOf returns the topic a request or response element names, if it is
// one: a Topic (string or *string), a TopicID, or a topic resource
// (DescribeConfigs, ResourceType 2).
func topicOf(v reflect.Value, idName func([16]byte) string) (string, bool) {
	if f := v.FieldByName("Topic"); f.IsValid() {
		switch {
		case f.Kind() == reflect.String && f.String() != "":
			return f.String(), true
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
			return f.Elem().String(), true
		}
	}
	if f := v.FieldByName("TopicID"); f.IsValid() && f.Type() == reflect.TypeOf([16]byte{}) {
		if id := f.Interface().([16]byte); id != ([16]byte{}) {
			return idName(id), true
		}
	}
	if rt, rn := v.FieldByName("ResourceType"), v.FieldByName("ResourceName"); rt.IsValid() && rn.IsValid() &&
		rt.Kind() == reflect.Int8 && rt.Int() == int64(kmsg.ConfigResourceTypeTopic) && rn.Kind() == reflect.String {
		return rn.String(), true
	}
	return "", false
}

// requestNames reports whether a request names topic (and partition, when
// partition >= 0) anywhere in it.
func requestNames(req kmsg.Request, topic string, partition int32, idName func([16]byte) string) bool {
	return names(reflect.ValueOf(req), topic, partition, idName)
}

func names(v reflect.Value, topic string, partition int32, idName func([16]byte) string) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && names(v.Elem(), topic, partition, idName)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return false
		}
		for i := range v.Len() {
			if names(v.Index(i), topic, partition, idName) {
				return true
			}
		}
	case reflect.Struct:
		if t, ok := topicOf(v, idName); ok {
			return t == topic && (partition < 0 || hasPartition(v, partition))
		}
		if f := v.FieldByName("TopicNames"); f.IsValid() && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String {
			for i := range f.Len() {
				if f.Index(i).String() == topic && partition < 0 {
					return true
				}
			}
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Slice || f.Kind() == reflect.Pointer {
				if names(f, topic, partition, idName) {
					return true
				}
			}
		}
	}
	return false
}

// hasPartition reports whether a topic element lists the partition (as
// elements with a Partition field, or a list of int32).
func hasPartition(v reflect.Value, partition int32) bool {
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		for j := range f.Len() {
			e := f.Index(j)
			switch {
			case e.Kind() == reflect.Int32 && v.Type().Field(i).Name == "Partitions":
				if int32(e.Int()) == partition {
					return true
				}
			case e.Kind() == reflect.Struct:
				if p := e.FieldByName("Partition"); p.IsValid() && p.Kind() == reflect.Int32 && int32(p.Int()) == partition {
					return true
				}
			}
		}
	}
	return false
}

// identity are the fields that say which entry a response element
// answers: copied from the request's element.
var identity = map[string]bool{"Topic": true, "TopicID": true, "Partition": true, "Key": true, "Group": true,
	"MemberID": true, "InstanceID": true, "ResourceType": true, "ResourceName": true, "Name": true,
	"TransactionalID": true}

// errorResponse answers a whole request with code: every entry the
// request names gets it, and so does the response's own error field
// (except Fetch's, which is about fetch sessions).
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	fillError(reflect.ValueOf(resp).Elem(), reflect.ValueOf(req).Elem(), code, req.Key() != 1)
	return resp
}

// unknownOffsets are the offset fields Kafka answers -1 in an entry with
// an error.
var unknownOffsets = []string{"BaseOffset", "Offset", "HighWatermark", "LastStableOffset", "LogStartOffset", "LogAppendTime", "LowWatermark"}

func fillError(dst, src reflect.Value, code int16, top bool) {
	if f := dst.FieldByName("ErrorCode"); top && f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
		for _, name := range unknownOffsets {
			if o := dst.FieldByName(name); o.IsValid() && o.Kind() == reflect.Int64 {
				o.SetInt(-1)
			}
		}
	}
	if !src.IsValid() {
		return
	}
	for i := range dst.NumField() {
		df := dst.Field(i)
		if df.Kind() != reflect.Slice || df.Type().Elem().Kind() != reflect.Struct {
			continue
		}
		name := dst.Type().Field(i).Name
		sf, key := src.FieldByName(name), ""
		switch {
		case name == "Coordinators": // FindCoordinator v4+
			sf, key = src.FieldByName("CoordinatorKeys"), "Key"
		case name == "Topics" && src.FieldByName("TopicNames").IsValid() && src.FieldByName("TopicNames").Len() > 0:
			sf, key = src.FieldByName("TopicNames"), "Topic" // DeleteTopics v0–v5
		}
		if !sf.IsValid() || sf.Kind() != reflect.Slice {
			continue
		}
		out := reflect.MakeSlice(df.Type(), sf.Len(), sf.Len())
		for j := range sf.Len() {
			de, se := out.Index(j), sf.Index(j)
			if d, ok := de.Addr().Interface().(interface{ Default() }); ok {
				d.Default()
			}
			switch se.Kind() {
			case reflect.Struct:
				for k := range de.NumField() {
					n := de.Type().Field(k).Name
					if s := se.FieldByName(n); identity[n] && s.IsValid() && s.Type() == de.Field(k).Type() {
						de.Field(k).Set(s)
					}
				}
				fillError(de, se, code, true)
			case reflect.Int32: // a list of partitions
				setScalar(de, "Partition", se)
				fillError(de, reflect.Value{}, code, true)
			case reflect.String:
				if key == "" {
					key = "Topic"
				}
				setScalar(de, key, se)
				fillError(de, reflect.Value{}, code, true)
			}
		}
		df.Set(out)
	}
}

// setScalar sets field name of v to s (a string field may be *string).
func setScalar(v reflect.Value, name string, s reflect.Value) {
	f := v.FieldByName(name)
	switch {
	case !f.IsValid():
	case f.Type() == s.Type():
		f.Set(s)
	case f.Kind() == reflect.Pointer && f.Type().Elem() == s.Type():
		p := reflect.New(s.Type())
		p.Elem().Set(s)
		f.Set(p)
	}
}

// setErrors sets code on the entries of a served response that answer
// topic (partition, when >= 0): the topic's own error field, or its
// partitions'.
func setErrors(resp kmsg.Response, topic string, partition int32, code int16, idName func([16]byte) string) {
	setIn(reflect.ValueOf(resp), topic, partition, code, idName)
}

func setIn(v reflect.Value, topic string, partition int32, code int16, idName func([16]byte) string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			setIn(v.Elem(), topic, partition, code, idName)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			for i := range v.Len() {
				setIn(v.Index(i), topic, partition, code, idName)
			}
		}
	case reflect.Struct:
		if t, ok := topicOf(v, idName); ok {
			if t != topic {
				return
			}
			if ec := v.FieldByName("ErrorCode"); partition < 0 && ec.IsValid() && ec.Kind() == reflect.Int16 {
				ec.SetInt(int64(code))
				return
			}
			for i := range v.NumField() {
				f := v.Field(i)
				if f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Struct {
					continue
				}
				for j := range f.Len() {
					e := f.Index(j)
					p, ec := e.FieldByName("Partition"), e.FieldByName("ErrorCode")
					if p.IsValid() && ec.IsValid() && ec.Kind() == reflect.Int16 && (partition < 0 || int32(p.Int()) == partition) {
						ec.SetInt(int64(code))
					}
				}
			}
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Slice || f.Kind() == reflect.Pointer {
				setIn(f, topic, partition, code, idName)
			}
		}
	}
}
