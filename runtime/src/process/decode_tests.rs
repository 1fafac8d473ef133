//! Tests of [`super`] (decode.rs): splitting across any chunk boundary,
//! errors at their byte offsets, validation marks, lines.

use super::*;
use serde_json::json;
use std::io::BufReader;

/// A reader that returns at most `sizes[i % len]` bytes per read.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    call: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = self.sizes[self.call % self.sizes.len()].max(1);
        self.call += 1;
        let n = size.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn json_items(text: &str, sizes: Vec<usize>) -> (Vec<Item>, Option<String>) {
    let reader = Chunked {
        data: text.as_bytes(),
        sizes,
        call: 0,
    };
    // A tiny buffer so chunk boundaries land everywhere.
    let mut out = Vec::new();
    let result = decode_json(BufReader::with_capacity(3, reader), &mut |item| {
        out.push(item);
        true
    });
    let err = match result {
        Ok(()) => None,
        Err(Stop::Parse(msg)) => Some(msg),
        Err(other) => panic!("unexpected stop {other:?}"),
    };
    (out, err)
}

const TRICKY: &str = " \n [ {\"a\": \"x]y,z\\\"]\", \"b\": [1, [2, {\"c\": \"}\"}]]},\t\"\\\\\", -1.5e3 , [] ,{}, null,true,\"\u{e9}\u{1f600}\" ]\r\n ";

#[test]
fn arrays_stream_across_any_chunk_boundary() {
    let want: Vec<Item> = match serde_json::from_str(TRICKY.trim()).unwrap() {
        Item::Array(items) => items,
        _ => unreachable!(),
    };
    for sizes in [vec![1], vec![2], vec![3, 1, 7], vec![5, 13], vec![1000]] {
        let (got, err) = json_items(TRICKY, sizes.clone());
        assert_eq!(err, None, "{sizes:?}");
        assert_eq!(got, want, "{sizes:?}");
    }
}

/// A fixed-seed generator of nested values full of JSON punctuation.
fn random_value(seed: &mut u64, depth: u32) -> Item {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let pick = *seed % if depth > 2 { 5 } else { 7 };
    const TEXTS: [&str; 6] = ["]", ",", "\"", "\\", "{[\"]}", "\u{e9}\u{1f600}\n"];
    match pick {
        0 => json!(*seed % 1000),
        1 => json!(-((*seed % 97) as f64) / 8.0),
        2 => json!(TEXTS[(*seed % 6) as usize]),
        3 => json!(*seed % 2 == 0),
        4 => Item::Null,
        5 => Item::Array(
            (0..*seed % 4)
                .map(|_| random_value(seed, depth + 1))
                .collect(),
        ),
        _ => {
            let mut map = serde_json::Map::new();
            for i in 0..*seed % 4 {
                map.insert(
                    format!("k{i}{}", TEXTS[(i % 6) as usize]),
                    random_value(seed, depth + 1),
                );
            }
            Item::Object(map)
        }
    }
}

#[test]
fn random_arrays_decode_like_a_whole_parse() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for round in 0..200 {
        let items: Vec<Item> = (0..seed % 12).map(|_| random_value(&mut seed, 0)).collect();
        let text = if round % 2 == 0 {
            serde_json::to_string(&items).unwrap()
        } else {
            serde_json::to_string_pretty(&items).unwrap()
        };
        let sizes = vec![1 + (seed % 7) as usize, 1 + (seed % 13) as usize, 64];
        let (got, err) = json_items(&text, sizes);
        assert_eq!(err, None, "{text}");
        assert_eq!(got, items, "{text}");
    }
}

/// Records what the splitter hands over.
struct Recorder(Vec<(Vec<u8>, usize, Option<Shape>)>);

impl Sink for Recorder {
    fn item(&mut self, _item: Item) -> bool {
        true
    }

    fn element(
        &mut self,
        bytes: &[u8],
        offset: usize,
        checked: Option<Shape>,
    ) -> Result<bool, Stop> {
        self.0.push((bytes.to_vec(), offset, checked));
        Ok(true)
    }
}

#[test]
fn elements_marked_valid_parse_and_the_others_are_left_to_serde_json() {
    let text = "[1, {\"a\": [2]} ,\"\\ud83d\\ude00\", {\"k\":\"v\",\"n\":2}, 1e999, [] ]";
    for size in [1, 2, 3, 7, 64] {
        let reader = Chunked {
            data: text.as_bytes(),
            sizes: vec![size],
            call: 0,
        };
        let mut sink = Recorder(Vec::new());
        // serde_json refuses 1e999; the splitter hands it over unchecked.
        decode_json_to(BufReader::with_capacity(size, reader), &mut sink).unwrap();
        let got: Vec<(String, usize, Option<bool>)> = sink
            .0
            .iter()
            .map(|(b, o, c)| {
                (
                    String::from_utf8_lossy(b).trim().to_string(),
                    *o,
                    c.map(|c| c.flat),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("1".to_string(), 1, Some(false)),
                ("{\"a\": [2]}".to_string(), 3, Some(false)),
                ("\"\\ud83d\\ude00\"".to_string(), 16, None),
                ("{\"k\":\"v\",\"n\":2}".to_string(), 31, Some(true)),
                ("1e999".to_string(), 48, None),
                ("[]".to_string(), 55, Some(false)),
            ],
            "buffer of {size}"
        );
        for (bytes, _, checked) in &sink.0 {
            if checked.is_some() {
                assert!(serde_json::from_slice::<Item>(bytes).is_ok());
            }
        }
    }
}

#[test]
fn non_arrays_are_one_item_and_empty_is_null() {
    assert_eq!(
        json_items("{\"a\":[1]}", vec![2]).0,
        vec![json!({"a": [1]})]
    );
    assert_eq!(json_items(" 21\n", vec![1]).0, vec![json!(21)]);
    assert_eq!(json_items("\"s]\"", vec![1]).0, vec![json!("s]")]);
    assert_eq!(json_items("", vec![1]).0, vec![Item::Null]);
    assert_eq!(json_items(" \n\t", vec![1]).0, vec![Item::Null]);
    assert_eq!(json_items("\u{feff}\u{a0}[1]", vec![1]).0, vec![json!(1)]);
    assert_eq!(json_items("[]", vec![1]), (vec![], None));
    assert_eq!(json_items(" [ ] ", vec![1]), (vec![], None));
}

#[test]
fn malformed_json_fails_after_the_earlier_items() {
    let (got, err) = json_items("[1, {\"a\": 2}, {\"b\" 3}, 4]", vec![2]);
    assert_eq!(got, vec![json!(1), json!({"a": 2})]);
    // serde_json's message, at the byte offset in the whole array.
    assert_eq!(err.unwrap(), "expected `:` at position 19");
    for bad in [
        "[1,2", "[1 2]", "[1,]", "nope", "[1] x", "{\"a\":1", "[\"abc",
    ] {
        let (_, err) = json_items(bad, vec![1]);
        assert!(err.is_some(), "{bad}");
    }
    // An element cut off by the end (maybe a longer number) is not yielded.
    let (got, err) = json_items("[1,2", vec![1]);
    assert_eq!(got, vec![json!(1)]);
    assert_eq!(err.unwrap(), "EOF while parsing a list at position 4");
    assert_eq!(
        json_items("[1,]", vec![1]).1.unwrap(),
        "trailing comma at position 3"
    );
    assert_eq!(
        json_items("[,1]", vec![1]).1.unwrap(),
        "expected value at position 1"
    );
    assert_eq!(
        json_items("[1}", vec![1]).1.unwrap(),
        "expected `,` or `]` at position 2"
    );
    assert_eq!(
        json_items("[1] x", vec![1]).1.unwrap(),
        "trailing characters at position 4"
    );
    assert_eq!(
        json_items("[1,\n{\"a\":\n x}]", vec![2]).1.unwrap(),
        "expected value at position 11"
    );
}

#[test]
fn a_consumer_can_stop_early() {
    let mut seen = 0;
    let result = decode_json(&b"[1,2,3,4]"[..], &mut |_| {
        seen += 1;
        seen < 2
    });
    assert!(matches!(result, Err(Stop::Consumer)));
    assert_eq!(seen, 2);
}

#[test]
fn lines_match_split_and_filter() {
    let text = "a\r\n\r\nb\rc\n\nd\r";
    for size in [1, 2, 3, 100] {
        let reader = Chunked {
            data: text.as_bytes(),
            sizes: vec![size],
            call: 0,
        };
        let mut out = Vec::new();
        decode_lines(BufReader::with_capacity(2, reader), &mut |item| {
            out.push(item);
            true
        })
        .unwrap();
        assert_eq!(out, vec![json!("a"), json!("b\rc"), json!("d\r")]);
    }
    let mut out = Vec::new();
    decode_lines(&b"ok\n\xff\xfex\n"[..], &mut |item| {
        out.push(item);
        true
    })
    .unwrap();
    assert_eq!(out, vec![json!("ok"), json!("\u{fffd}\u{fffd}x")]);
}
