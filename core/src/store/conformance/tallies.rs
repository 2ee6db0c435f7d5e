//! The meter's counters (`add_tally`, `tallies`): additions add up, expire, count once per
//! write id, and saturate instead of wrapping.

use futures::future::join_all;

use crate::meter::tally::{Tally, TallyKey, TurnTake};
use crate::store::TurnStore;

/// Tally rows add up field by field, per key, and read as absent once expired.
pub async fn tallies_add_up_and_expire<S: TurnStore>(s: &S, p: &str) {
    let part = format!("{p}/part");
    let a = TallyKey::new(&part, "a");
    let one = Tally {
        turns: 1,
        input_tokens: 7,
        cost_micro_usd: 3,
        ..Tally::default()
    };
    s.add_tally(&a, &one, 1000, "w1").await.expect("add_tally");
    s.add_tally(&a, &one, 2000, "w2").await.expect("add_tally");
    s.add_tally(&TallyKey::new(&part, "b"), &one, 500, "w1")
        .await
        .expect("add_tally");
    s.add_tally(&TallyKey::new(format!("{p}/other"), "a"), &one, 5000, "w1")
        .await
        .expect("add_tally");
    let rows = s.tallies(&part, 0).await.expect("tallies");
    let mut two = one;
    two.add(&one);
    assert_eq!(rows, vec![("a".to_owned(), two), ("b".to_owned(), one)]);
    // `b` expired at 500; `a`'s expiry moved to the later 2000.
    let rows = s.tallies(&part, 1500).await.expect("tallies");
    assert_eq!(rows, vec![("a".to_owned(), two)]);
    assert!(s.tallies(&part, 2000).await.expect("tallies").is_empty());
    assert!(
        s.tallies(&format!("{p}/none"), 0)
            .await
            .expect("tallies")
            .is_empty()
    );
}

/// A tally write sent again with its write id (an SDK retry after an answer that came too late,
/// a request resent) counts once: a turn taken twice is one turn (and still admitted), in
/// every row it was taken from, a usage addition repeated adds once. Other write ids still
/// count.
pub async fn a_repeated_tally_write_counts_once<S: TurnStore>(s: &S, p: &str) {
    let part = format!("{p}/part");
    let minute = TallyKey::new(&part, "m/1");
    let turns = |rows: Vec<(String, Tally)>, item: &str| {
        rows.into_iter()
            .find(|(i, _)| i == item)
            .map(|(_, t)| t.turns)
            .unwrap_or(0)
    };
    let take = |key: &TallyKey, limit: u64| TurnTake {
        key: key.clone(),
        limit,
    };
    // A limit of 2: the same turn taken three times leaves room for a second turn.
    for _ in 0..3 {
        assert!(
            s.take_turns(&[take(&minute, 2)], 9000, "w-a")
                .await
                .expect("take_turns")
        );
    }
    assert_eq!(turns(s.tallies(&part, 0).await.expect("tallies"), "m/1"), 1);
    assert!(
        s.take_turns(&[take(&minute, 2)], 9000, "w-b")
            .await
            .expect("take_turns")
    );
    assert!(
        !s.take_turns(&[take(&minute, 2)], 9000, "w-c")
            .await
            .expect("take_turns")
    );
    assert_eq!(turns(s.tallies(&part, 0).await.expect("tallies"), "m/1"), 2);
    // Two rows at once: a retry of a write both count is admitted and counts nothing more,
    // even once a row is full.
    let (wide, narrow) = (TallyKey::new(&part, "m/2"), TallyKey::new(&part, "m/3"));
    let both = [take(&wide, 5), take(&narrow, 1)];
    for _ in 0..2 {
        assert!(s.take_turns(&both, 9000, "w-e").await.expect("take_turns"));
    }
    let rows = s.tallies(&part, 0).await.expect("tallies");
    assert_eq!((turns(rows.clone(), "m/2"), turns(rows, "m/3")), (1, 1));

    let usage = TallyKey::new(&part, "u");
    let one = Tally {
        turns: 1,
        input_tokens: 7,
        cost_micro_usd: 3,
        ..Tally::default()
    };
    let writes = join_all((0..4).map(|_| s.add_tally(&usage, &one, 9000, "w-a"))).await;
    for w in writes {
        w.expect("add_tally");
    }
    s.add_tally(&usage, &one, 9000, "w-a")
        .await
        .expect("add_tally");
    s.add_tally(&usage, &one, 9000, "w-b")
        .await
        .expect("add_tally");
    let rows = s.tallies(&part, 0).await.expect("tallies");
    let mut two = one;
    two.add(&one);
    assert_eq!(
        rows.into_iter().find(|(i, _)| i == "u").map(|(_, t)| t),
        Some(two),
        "a usage addition repeated with its write id counted more than once"
    );
    // A write id is per row: the same id adds to another row.
    let other = TallyKey::new(&part, "v");
    s.add_tally(&other, &one, 9000, "w-a")
        .await
        .expect("add_tally");
    let rows = s.tallies(&part, 0).await.expect("tallies");
    assert_eq!(
        rows.iter().find(|(i, _)| i == "v").map(|(_, t)| *t),
        Some(one)
    );
}

/// A count near the top of its range plus more stays at the top, never wraps to a small one
/// (issue 25: 2^64−10 tokens then 20 read as 10, and a spend limit never refused again). A
/// SQL store's integers stop at 2^63−1; every store reads at least that.
pub async fn tally_additions_saturate<S: TurnStore>(s: &S, p: &str) {
    let key = TallyKey::new(format!("{p}/meter"), "d/2026-12-03");
    let huge = Tally {
        input_tokens: u64::MAX - 10,
        cost_micro_usd: u64::MAX - 10,
        ..Tally::default()
    };
    let more = Tally {
        input_tokens: 20,
        cost_micro_usd: 20,
        model_calls: 1,
        ..Tally::default()
    };
    s.add_tally(&key, &huge, 9000, "w1")
        .await
        .expect("add_tally");
    s.add_tally(&key, &more, 9000, "w2")
        .await
        .expect("add_tally");
    let rows = s.tallies(&key.part, 1000).await.expect("tallies");
    let t = rows[0].1;
    let top = i64::MAX as u64;
    assert!(
        t.input_tokens >= top && t.cost_micro_usd >= top && t.tokens() >= top,
        "a sum wrapped: {t:?}"
    );
    assert_eq!(t.model_calls, 1);
}
