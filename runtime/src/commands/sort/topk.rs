//! The bounded sort behind `sort | head --n K`: a merge sort whose runs keep
//! at most K items ([`RunStack`]), and the items it may drop on arrival
//! ([`Cutoff`]).

use super::{compare_keys, Key};
use std::cmp::Ordering;

/// A stable, streaming merge sort that keeps at most `limit` items of each
/// run: with `limit = usize::MAX` it is a full sort; with `limit = K` it
/// yields exactly the first K items of the full sort in O(K·log(N/K))
/// memory.
///
/// The runs form a binary counter: every two items make a run of 2, two runs
/// of equal (untruncated) size merge at once, and at the end the remaining
/// runs merge from the right. The merge tree depends only on N, never on
/// K, and the first K outputs of a merge depend only on the first K items of
/// each side, so truncating every merge to K changes nothing in those K
/// outputs, even for comparators that are not total orders (numbers mixed
/// with strings), which a heap-based top-K could not promise. Ties keep
/// input order (the left run wins), and it never panics on such comparators
/// (unlike `slice::sort_by`).
pub(super) struct RunStack<T> {
    /// (untruncated size, items) from the oldest run to the newest.
    runs: Vec<(usize, Vec<T>)>,
    /// The odd item waiting for a partner.
    pending: Option<T>,
    limit: usize,
    /// Empty buffers of merged runs, reused (see [`RunStack::recycle`]).
    spare: Vec<Vec<T>>,
    /// Called once on every item of a run that reaches [`SETTLE_AT`] items
    /// (kept for long): unparsed items copy their text out of the batch
    /// they came in, so a few kept items do not keep whole batches.
    settle: Box<dyn Fn(&mut T)>,
}

/// The untruncated run size from which items are [`RunStack::settle`]d.
const SETTLE_AT: usize = 2048;

impl<T> RunStack<T> {
    pub(super) fn new(limit: usize, settle: Box<dyn Fn(&mut T)>) -> Self {
        RunStack {
            runs: Vec::new(),
            pending: None,
            limit,
            spare: Vec::new(),
            settle,
        }
    }

    /// Add the next item; `less(a, b)`: `a` sorts strictly before `b`.
    pub(super) fn push(&mut self, item: T, less: &dyn Fn(&T, &T) -> bool) {
        let Some(first) = self.pending.take() else {
            self.pending = Some(item);
            return;
        };
        // A merge of two single items.
        let mut pair = self.spare.pop().unwrap_or_default();
        if less(&item, &first) {
            pair.extend([item, first]);
        } else {
            pair.extend([first, item]);
        }
        pair.truncate(self.limit);
        self.runs.push((2, pair));
        while self.runs.len() >= 2
            && self.runs[self.runs.len() - 1].0 == self.runs[self.runs.len() - 2].0
        {
            self.merge_top(less);
        }
    }

    pub(super) fn finish(mut self, less: &dyn Fn(&T, &T) -> bool) -> Vec<T> {
        if let Some(last) = self.pending.take() {
            let mut single = vec![last];
            single.truncate(self.limit);
            self.runs.push((1, single));
        }
        while self.runs.len() >= 2 {
            self.merge_top(less);
        }
        self.runs.pop().map(|(_, run)| run).unwrap_or_default()
    }

    fn merge_top(&mut self, less: &dyn Fn(&T, &T) -> bool) {
        let (Some((nb, b)), Some((na, a))) = (self.runs.pop(), self.runs.pop()) else {
            return;
        };
        let mut merged = self.merge(a, b, less);
        if na + nb >= SETTLE_AT && (na < SETTLE_AT || nb < SETTLE_AT) {
            merged.iter_mut().for_each(|item| (self.settle)(item));
        }
        self.runs.push((na + nb, merged));
    }

    /// Merge two sorted runs, keeping the first `limit` outputs; on a tie
    /// the left run's item comes first.
    fn merge(&mut self, mut a: Vec<T>, mut b: Vec<T>, less: &dyn Fn(&T, &T) -> bool) -> Vec<T> {
        let want = (a.len() + b.len()).min(self.limit);
        let mut out = self.spare.pop().unwrap_or_default();
        out.reserve(want);
        {
            let mut a = a.drain(..).peekable();
            let mut b = b.drain(..).peekable();
            while out.len() < want {
                let take_b = match (a.peek(), b.peek()) {
                    (Some(x), Some(y)) => less(y, x),
                    (None, Some(_)) => true,
                    (_, None) => false,
                };
                let next = if take_b { b.next() } else { a.next() };
                match next {
                    Some(item) => out.push(item),
                    None => break,
                }
            }
        }
        self.recycle(a);
        self.recycle(b);
        out
    }

    /// Keep an emptied run's buffer for the next merge (a bounded sort
    /// would otherwise allocate and free one per merge).
    fn recycle(&mut self, run: Vec<T>) {
        let bytes = run.capacity() * std::mem::size_of::<T>();
        if self.spare.len() < SPARE_RUNS && bytes <= SPARE_BYTES {
            self.spare.push(run);
        }
    }
}

/// At most this many emptied run buffers are kept for reuse, each at most
/// this large.
const SPARE_RUNS: usize = 16;
const SPARE_BYTES: usize = 16 << 10;

/// The items a bounded sort (first K) may drop as they arrive, before they
/// reach the [`RunStack`].
///
/// While every key seen is a number or absent, or every key is text or
/// absent, the comparator is a total preorder on them. An item with at
/// least K earlier items whose keys sort before or equal to its own is then
/// never among the first K, whatever comes later: every run to the left of
/// its run holds only earlier items, all of that pure kind, so they are
/// sorted exactly, and a merge puts it behind each of their items that
/// sorts before or with it (the left run wins ties); those are at least K
/// by the time all earlier runs have merged into its run. Once both numbers
/// and text have been seen, later items all go to the merge sort, and the
/// items dropped before stay correctly dropped.
pub(super) struct Cutoff {
    limit: usize,
    desc: bool,
    /// The `limit` smallest keys so far, the largest on top; `None` once
    /// keys of both kinds were seen.
    best: Option<std::collections::BinaryHeap<Ranked>>,
    seen_num: bool,
    seen_text: bool,
}

/// A key ordered by [`compare_keys`] (a total preorder while [`Cutoff`]
/// uses it).
struct Ranked(Key, bool);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(&self.0, &other.0, self.1)
    }
}

impl Cutoff {
    pub(super) fn new(limit: usize, desc: bool) -> Cutoff {
        Cutoff {
            limit,
            desc,
            best: Some(std::collections::BinaryHeap::new()),
            seen_num: false,
            seen_text: false,
        }
    }

    /// Whether the next item, whose key is `key`, cannot be in the result.
    pub(super) fn drops(&mut self, key: &Key) -> bool {
        if self.limit == 0 {
            return true;
        }
        match key {
            Key::Num(..) => self.seen_num = true,
            Key::Text { .. } => self.seen_text = true,
            Key::Absent => {}
        }
        if self.seen_num && self.seen_text {
            self.best = None;
        }
        let Some(best) = &mut self.best else {
            return false;
        };
        if best.len() == self.limit {
            if let Some(top) = best.peek() {
                if compare_keys(key, &top.0, self.desc) != Ordering::Less {
                    return true;
                }
            }
            best.pop();
        }
        best.push(Ranked(key.clone(), self.desc));
        false
    }
}
